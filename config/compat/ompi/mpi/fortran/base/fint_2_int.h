/* Debian's libopenmpi-dev does not install this Fortran-binding header, which
 * ompi/op/op.h includes for two conversion macros.  On the platforms we build
 * for, MPI_Fint and int have the same size (configure checks), so the
 * conversions are plain casts. */
#ifndef OSC_UCXX_COMPAT_FINT_2_INT_H
#define OSC_UCXX_COMPAT_FINT_2_INT_H
#ifndef OMPI_INT_2_FINT
#define OMPI_INT_2_FINT(a) ((MPI_Fint) (a))
#endif
#ifndef OMPI_FINT_2_INT
#define OMPI_FINT_2_INT(a) ((int) (a))
#endif
#endif
