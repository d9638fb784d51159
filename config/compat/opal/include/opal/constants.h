/* Debian's libopenmpi-dev installs opal/constants.h but not this source-tree
 * path, which opal/mca/common/ucx/common_ucx.h includes; forward to it. */
#include "opal/constants.h"
