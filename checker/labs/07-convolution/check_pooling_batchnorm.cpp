// Checks for lab 07, part 2 (pooling and batch normalization). Placeholder while the part is written.
#include <gtest/gtest.h>

#include "pooling_batchnorm.h"
#include "wb_check.h"
