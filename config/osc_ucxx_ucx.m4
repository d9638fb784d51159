dnl Locate UCX (ucp + ucs). Sets UCX_CPPFLAGS, UCX_LDFLAGS, UCX_LIBS.
AC_DEFUN([OSC_UCXX_CHECK_UCX], [
    AC_ARG_WITH([ucx],
        [AS_HELP_STRING([--with-ucx=DIR], [UCX installation prefix (default: system)])])
    UCX_CPPFLAGS=
    UCX_LDFLAGS=
    AS_IF([test -n "$with_ucx" && test "$with_ucx" != yes],
          [UCX_CPPFLAGS="-I$with_ucx/include"
           for d in "$with_ucx/lib" "$with_ucx/lib64"; do
               AS_IF([test -d "$d"], [UCX_LDFLAGS="$UCX_LDFLAGS -L$d"])
           done],
          [AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists ucx 2>/dev/null],
                 [UCX_CPPFLAGS=`$PKG_CONFIG --cflags-only-I ucx`
                  UCX_LDFLAGS=`$PKG_CONFIG --libs-only-L ucx`])])
    osc_ucxx_save_CPPFLAGS=$CPPFLAGS
    osc_ucxx_save_LDFLAGS=$LDFLAGS
    CPPFLAGS="$CPPFLAGS $UCX_CPPFLAGS"
    LDFLAGS="$LDFLAGS $UCX_LDFLAGS"
    AC_CHECK_HEADER([ucp/api/ucp.h], [],
        [AC_MSG_ERROR([ucp/api/ucp.h not found: install UCX (Debian: apt-get install libucx-dev) or pass --with-ucx=DIR])])
    AC_CHECK_LIB([ucp], [ucp_put_nbx], [],
        [AC_MSG_ERROR([libucp with ucp_put_nbx (UCX >= 1.10) not found: install libucx-dev])], [-lucs])
    AC_CHECK_DECL([ucp_worker_fence], [], [AC_MSG_ERROR([UCX too old: no ucp_worker_fence])],
        [#include <ucp/api/ucp.h>])
    CPPFLAGS=$osc_ucxx_save_CPPFLAGS
    LDFLAGS=$osc_ucxx_save_LDFLAGS
    LIBS=`echo "$LIBS" | sed 's/-lucp//'`
    UCX_LIBS="-lucp -lucs"
    AC_SUBST([UCX_CPPFLAGS])
    AC_SUBST([UCX_LDFLAGS])
    AC_SUBST([UCX_LIBS])
])
