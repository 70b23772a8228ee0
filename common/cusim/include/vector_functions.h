#pragma once
#include "cusim/vector_types.h"
