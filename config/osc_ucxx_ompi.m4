dnl Locate an installed Open MPI with its internal (MCA) headers.
dnl Sets OMPI_CPPFLAGS, OMPI_LDFLAGS, OMPI_LIBS, MPICC, MPI_CFLAGS, MPI_LIBS,
dnl OMPI_VERSION_STRING and OMPI_PKGLIBDIR.
AC_DEFUN([OSC_UCXX_CHECK_OMPI], [
    AC_ARG_WITH([ompi],
        [AS_HELP_STRING([--with-ompi=DIR],
            [Open MPI installation prefix, or the directory holding mpicc (default: search PATH)])])

    MPICC=
    AS_IF([test -n "$with_ompi" && test "$with_ompi" != yes],
          [for d in "$with_ompi/bin" "$with_ompi"; do
               AS_IF([test -x "$d/mpicc"], [MPICC="$d/mpicc"; break])
           done
           AS_IF([test -z "$MPICC"],
                 [AC_MSG_ERROR([no mpicc under --with-ompi=$with_ompi])])],
          [AC_PATH_PROG([MPICC], [mpicc])])
    AS_IF([test -z "$MPICC"],
          [AC_MSG_ERROR([mpicc not found: install Open MPI (Debian: apt-get install libopenmpi-dev openmpi-bin) or pass --with-ompi=DIR])])

    ompi_incdirs=`$MPICC --showme:incdirs 2>/dev/null`
    ompi_libdirs=`$MPICC --showme:libdirs 2>/dev/null`
    OMPI_CPPFLAGS=
    for d in $ompi_incdirs; do
        OMPI_CPPFLAGS="$OMPI_CPPFLAGS -I$d"
        dnl The internal headers live in <incdir>/openmpi on Debian and in <incdir> upstream.
        AS_IF([test -d "$d/openmpi/ompi"], [OMPI_CPPFLAGS="$OMPI_CPPFLAGS -I$d/openmpi"])
    done
    OMPI_LDFLAGS=
    for d in $ompi_libdirs; do OMPI_LDFLAGS="$OMPI_LDFLAGS -L$d"; done
    MPI_CFLAGS=`$MPICC --showme:compile`
    MPI_LIBS=`$MPICC --showme:link`

    osc_ucxx_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS $OMPI_CPPFLAGS -I$srcdir/config/compat"
    AC_CHECK_HEADER([mpi.h], [],
        [AC_MSG_ERROR([mpi.h not found: install the Open MPI development package (Debian: apt-get install libopenmpi-dev)])])
    AC_CHECK_HEADER([ompi/mca/osc/osc.h], [],
        [AC_MSG_ERROR([Open MPI's internal headers (ompi/mca/osc/osc.h) not found: install libopenmpi-dev (Debian ships them) or point --with-ompi at a full Open MPI installation])],
        [#include "ompi_config.h"])

    AC_MSG_CHECKING([the Open MPI version])
    AC_COMPUTE_INT([ompi_major], [OMPI_MAJOR_VERSION], [#include <mpi.h>], [ompi_major=0])
    AC_COMPUTE_INT([ompi_minor], [OMPI_MINOR_VERSION], [#include <mpi.h>], [ompi_minor=0])
    AC_COMPUTE_INT([ompi_release], [OMPI_RELEASE_VERSION], [#include <mpi.h>], [ompi_release=0])
    OMPI_VERSION_STRING="$ompi_major.$ompi_minor.$ompi_release"
    AC_MSG_RESULT([$OMPI_VERSION_STRING])
    dnl The series decides the libraries, the headers and a few internal APIs
    dnl (ompi/mca/osc/ucxx/osc_ucxx_compat.h); the osc interface is the same.
    AS_CASE(["$ompi_major.$ompi_minor"],
        [4.1], [OMPI_SERIES=4.1],
        [5.0], [OMPI_SERIES=5.0],
        [AC_MSG_ERROR([osc/ucxx builds against Open MPI 4.1.x or 5.0.x (found $OMPI_VERSION_STRING)])])
    dnl Our stand-in for ompi/mpi/fortran/base/fint_2_int.h casts MPI_Fint to int.
    AC_COMPUTE_INT([ompi_fint_size], [sizeof(MPI_Fint)], [#include <mpi.h>], [ompi_fint_size=0])
    AS_IF([test "$ompi_fint_size" != 4],
          [AC_MSG_ERROR([MPI_Fint is $ompi_fint_size bytes, not 4: config/compat/ompi/mpi/fortran/base/fint_2_int.h needs the real conversions])])
    CPPFLAGS=$osc_ucxx_save_CPPFLAGS

    dnl Every library the component uses, for -no-undefined linking.  5.0 has
    dnl no libopen-rte, and its internal PMIx header needs <pmix.h>, which is
    dnl not on mpicc's include path; the early start calls PMIx directly there
    dnl (osc_ucxx_compat.h: the modex).
    AS_IF([test "$OMPI_SERIES" = 4.1],
          [OMPI_LIBS="-lmpi -lopen-rte -lopen-pal"],
          [OMPI_LIBS="-lmpi -lopen-pal"
           PKG_CHECK_MODULES([PMIX], [pmix], [],
               [AC_MSG_ERROR([Open MPI 5.0's internal headers need PMIx's: install libpmix-dev ($PMIX_PKG_ERRORS)])])
           OMPI_CPPFLAGS="$OMPI_CPPFLAGS $PMIX_CFLAGS"
           OMPI_LIBS="$OMPI_LIBS $PMIX_LIBS"])

    dnl 5.0.x installs lack the thread and timer implementation headers that
    dnl opal_config.h names; config/compat has our stand-ins.  Their types
    dnl are embedded in libopen-pal's objects, so read the sizes the library
    dnl was built with from its class descriptors: osc_ucxx_compat.h asserts
    dnl ours match.
    AS_IF([test "$OMPI_SERIES" = 5.0],
          [OSC_UCXX_LIB_CLASS_SIZE([opal_mutex_t], [OSC_UCXX_LIB_SIZEOF_OPAL_MUTEX])
           OSC_UCXX_LIB_CLASS_SIZE([opal_thread_t], [OSC_UCXX_LIB_SIZEOF_OPAL_THREAD])])

    AC_PATH_PROG([OMPI_INFO], [ompi_info], [], [`AS_DIRNAME(["$MPICC"])`:$PATH])
    OMPI_PKGLIBDIR=
    AS_IF([test -n "$OMPI_INFO"],
          [OMPI_PKGLIBDIR=`$OMPI_INFO --path pkglibdir 2>/dev/null | sed -n 's/.*Pkglibdir: *//p'`])

    AC_SUBST([MPICC])
    AC_SUBST([MPI_CFLAGS])
    AC_SUBST([MPI_LIBS])
    AC_SUBST([OMPI_CPPFLAGS])
    AC_SUBST([OMPI_LDFLAGS])
    AC_SUBST([OMPI_LIBS])
    AC_SUBST([OMPI_VERSION_STRING])
    AC_SUBST([OMPI_SERIES])
])

dnl OSC_UCXX_LIB_CLASS_SIZE(class, define): run a program against the
dnl installed libopen-pal that prints the instance size its descriptor for
dnl CLASS records (fixed when the library was compiled), and add -DDEFINE=<size> to OMPI_CPPFLAGS (0 when cross
dnl compiling or when the program cannot run).
AC_DEFUN([OSC_UCXX_LIB_CLASS_SIZE], [
    AC_MSG_CHECKING([the size of $1 in libopen-pal])
    osc_ucxx_save_LIBS=$LIBS
    osc_ucxx_save_LDFLAGS=$LDFLAGS
    LIBS="$LIBS -lopen-pal"
    LDFLAGS="$LDFLAGS $OMPI_LDFLAGS"
    osc_ucxx_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS $OMPI_CPPFLAGS"
    AC_RUN_IFELSE([AC_LANG_PROGRAM([[#include <stdio.h>
#include "opal_config.h"
#include "opal/class/opal_object.h"
extern opal_class_t $1_class;]],
                      [[FILE *f = fopen("conftest.sz", "w");
  if (NULL == f) return 1;
  fprintf(f, "%zu", $1_class.cls_sizeof);
  return fclose(f);]])],
        [osc_ucxx_size=`cat conftest.sz`],
        [osc_ucxx_size=0], [osc_ucxx_size=0])
    CPPFLAGS=$osc_ucxx_save_CPPFLAGS
    LIBS=$osc_ucxx_save_LIBS
    LDFLAGS=$osc_ucxx_save_LDFLAGS
    AC_MSG_RESULT([$osc_ucxx_size])
    OMPI_CPPFLAGS="$OMPI_CPPFLAGS -D$2=$osc_ucxx_size"
])
