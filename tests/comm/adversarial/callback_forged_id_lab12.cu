// Attack on lab 12's callback channel (wb_comm_remote.h, add_callback/call_back): mlp_backward
// calls the judge back with an id the checks never gave out, from the process that runs the
// lab's code (the worker's own call_back()). Must happen: every check that calls mlp_backward
// fails with "a malformed reply", nothing the judge holds is touched, and the other checks are
// still run (they fail: nothing else is implemented, but a no-op broadcast is right at one rank).
#include "lab12_stubs.h"
#include "wb_comm_remote.h"

// The attack: calls the judge back with a function id the checks never passed, then, if it
// returns, with forged arguments through the real callback.
cudaError_t lab12::mlp_backward(const Mlp&, const float*, const float*, const int*, int, float, Activations&, float*,
                                float*, const BackwardOptions& options) {
  wb::remote::Writer w;
  w.put(0);
  wb::remote::comm_split::call_back(4242, w);
  if (options.on_gradient) options.on_gradient(-7);
  return cudaSuccess;
}
