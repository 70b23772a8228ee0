// Re-applied after every inclusion of <assert.h>/<cassert>, which redefine assert each time.
#include "cusim/assert.h"
#undef assert
#ifdef NDEBUG
#define assert(expr) (static_cast<void>(0))
#else
#define assert(expr) \
    (static_cast<bool>(expr) ? static_cast<void>(0) : ::cusim::detail::assert_fail(#expr, __FILE__, __LINE__, __func__))
#endif
