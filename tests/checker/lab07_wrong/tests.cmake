# Checker self-tests of lab 07 (convolution; pooling and batch normalization), included by
# tests/checker/CMakeLists.txt: the solution passes, the skeleton fails with "not implemented
# yet", and each known-wrong version (<name>.diff: one of the solution's files with one mistake)
# is rejected by the named check with a message that names its mistake. Part 2's known-wrong
# versions are listed in pooling_batchnorm.cmake.
wb_lab_selftests(07-convolution
  CHECKS "${WB_ROOT}/checker/labs/07-convolution/check_convolution.cpp"
         "${WB_ROOT}/checker/labs/07-convolution/check_pooling_batchnorm.cpp"
  SKELETON "not implemented yet: (conv2d_direct|conv2d_im2col|conv2d_implicit_gemm|conv2d_forward|conv2d_backward_data|conv2d_backward_filter|conv2d_bn_relu_inference|maxpool2d_forward|maxpool2d_backward|avgpool2d_forward|avgpool2d_backward|batchnorm_forward_training|batchnorm_forward_inference|batchnorm_backward) in labs/07-convolution/(convolution|pooling_batchnorm).cu")

include("${CMAKE_CURRENT_LIST_DIR}/pooling_batchnorm.cmake")
