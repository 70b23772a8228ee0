# Known-wrong versions of lab 07's part 2 (solutions/07-convolution/pooling_batchnorm.cu),
# included by tests.cmake.
