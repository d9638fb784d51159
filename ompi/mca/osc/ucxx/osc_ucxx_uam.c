/* placeholder: replaced by the implementation */
#include "ompi_config.h"
#include "osc_ucxx.h"
#include "osc_ucxx_uam.h"
int ompi_osc_ucxx_uam_register(struct ompi_win_t *w, uint64_t id, int k, void *f, void *e, int i) { return MPI_ERR_OTHER; }
int ompi_osc_ucxx_uam_deregister(struct ompi_win_t *w, uint64_t id) { return MPI_ERR_OTHER; }
int ompi_osc_ucxx_uam_attach(struct ompi_win_t *w, void *b, size_t s) { return MPI_ERR_OTHER; }
int ompi_osc_ucxx_uam_detach(struct ompi_win_t *w, void *b) { return MPI_ERR_OTHER; }
int ompi_osc_ucxx_uam_epoch_assert(struct ompi_win_t *w, int a) { return MPI_ERR_OTHER; }
int ompi_osc_ucxx_uam_issue(struct ompi_win_t *w, const ompi_osc_ucxx_am_args_t *a, int *c, struct ompi_request_t **r) { return MPI_ERR_OTHER; }
bool ompi_osc_ucxx_uam_in_handler(void) { return false; }
