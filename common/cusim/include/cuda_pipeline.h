// <cuda_pipeline.h>: the pipeline primitives (<cuda_pipeline_primitives.h>).
#pragma once
#include "cuda_pipeline_primitives.h"
