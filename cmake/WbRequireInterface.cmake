# wb_require_interface(<NN-name> <how>): a lab's checks reach its code only through
# checker/labs/<NN-name>/interface.cpp; on sim that is what runs the lab's code in a sandboxed
# worker process apart from the checks (the judge). Without it the lab's code would run inside
# the judge, able to rewrite its own verdict, so the build stops instead.
function(wb_require_interface lab how)
  if(NOT EXISTS "${WB_ROOT}/checker/labs/${lab}/interface.cpp")
    message(FATAL_ERROR "checker/labs/${lab}/interface.cpp is missing. Every lab declares there each "
            "function its checks call in the lab's code (${how}), so that the lab's code runs in a "
            "sandboxed worker process apart from its checks; without it the lab's code would run "
            "inside the grader. See docs/concepts/adding-a-lab.md.")
  endif()
endfunction()
