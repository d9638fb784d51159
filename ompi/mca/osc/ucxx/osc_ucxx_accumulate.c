#include "ompi_config.h"
#include "osc_ucxx.h"
int ompi_osc_ucxx_accumulate(const void *origin_addr, int origin_count,
                             struct ompi_datatype_t *origin_dt, int target,
                             ptrdiff_t target_disp, int target_count,
                             struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                             struct ompi_win_t *win) { return OMPI_ERR_NOT_SUPPORTED; }
int ompi_osc_ucxx_compare_and_swap(const void *origin_addr, const void *compare_addr,
                                   void *result_addr, struct ompi_datatype_t *dt, int target,
                                   ptrdiff_t target_disp, struct ompi_win_t *win) { return OMPI_ERR_NOT_SUPPORTED; }
int ompi_osc_ucxx_fetch_and_op(const void *origin_addr, void *result_addr,
                               struct ompi_datatype_t *dt, int target, ptrdiff_t target_disp,
                               struct ompi_op_t *op, struct ompi_win_t *win) { return OMPI_ERR_NOT_SUPPORTED; }
int ompi_osc_ucxx_get_accumulate(const void *origin_addr, int origin_count,
                                 struct ompi_datatype_t *origin_dt, void *result_addr,
                                 int result_count, struct ompi_datatype_t *result_dt,
                                 int target, ptrdiff_t target_disp, int target_count,
                                 struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                                 struct ompi_win_t *win) { return OMPI_ERR_NOT_SUPPORTED; }
int ompi_osc_ucxx_raccumulate(const void *origin_addr, int origin_count,
                              struct ompi_datatype_t *origin_dt, int target,
                              ptrdiff_t target_disp, int target_count,
                              struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                              struct ompi_win_t *win, struct ompi_request_t **request) { return OMPI_ERR_NOT_SUPPORTED; }
int ompi_osc_ucxx_rget_accumulate(const void *origin_addr, int origin_count,
                                  struct ompi_datatype_t *origin_dt, void *result_addr,
                                  int result_count, struct ompi_datatype_t *result_dt,
                                  int target, ptrdiff_t target_disp, int target_count,
                                  struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                                  struct ompi_win_t *win, struct ompi_request_t **request) { return OMPI_ERR_NOT_SUPPORTED; }
