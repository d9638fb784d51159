# -*- shell-script -*-
#
# Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
# $COPYRIGHT$
#
# In-tree build: copy this directory to ompi/mca/osc/ucxx of an Open MPI 4.1
# or 5.0 source tree, run ./autogen.pl there, and configure as usual
# (osc_ucxx_compat.h covers what differs between the two).  The component
# needs UCX with ucp_put_nbx (>= 1.10); it is skipped when UCX is absent.

# MCA_ompi_osc_ucxx_CONFIG([action-if-can-compile], [action-if-cant-compile])
AC_DEFUN([MCA_ompi_osc_ucxx_CONFIG],[
    AC_CONFIG_FILES([ompi/mca/osc/ucxx/Makefile])

    OMPI_CHECK_UCX([osc_ucxx], [osc_ucxx_happy=yes], [osc_ucxx_happy=no])

    AS_IF([test "$osc_ucxx_happy" = yes],
          [osc_ucxx_save_CPPFLAGS=$CPPFLAGS
           CPPFLAGS="$CPPFLAGS $osc_ucxx_CPPFLAGS"
           AC_CHECK_DECLS([ucp_put_nbx, ucp_worker_fence, ucp_am_send_nbx],
                          [], [osc_ucxx_happy=no], [[#include <ucp/api/ucp.h>]])
           CPPFLAGS=$osc_ucxx_save_CPPFLAGS])

    # Hot paths aligned (see the top-level configure.ac: the same flags).
    osc_ucxx_CFLAGS=
    osc_ucxx_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -falign-functions=64 -falign-loops=32 -Werror"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
                      [osc_ucxx_CFLAGS="-falign-functions=64 -falign-loops=32"])
    CFLAGS=$osc_ucxx_save_CFLAGS

    AS_IF([test "$osc_ucxx_happy" = yes], [$1], [$2])

    AC_SUBST([osc_ucxx_CPPFLAGS])
    AC_SUBST([osc_ucxx_CFLAGS])
    AC_SUBST([osc_ucxx_LDFLAGS])
    AC_SUBST([osc_ucxx_LIBS])
])dnl
