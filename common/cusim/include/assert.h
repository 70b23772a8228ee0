// cusim wrapper: the C library's assert.h, then cusim's device-aware assert (see cusim/assert.h).
#include_next <assert.h>
#ifdef __cplusplus
#include "cusim/assert_redefine.h"
#endif
