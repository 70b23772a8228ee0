// Checks for lab 07, part 1 (convolution). Placeholder while the part is written.
#include <gtest/gtest.h>

#include "convolution.h"
#include "wb_check.h"
