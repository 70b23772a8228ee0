// Known wrong: equal chunks of count/n elements. When count % n != 0 the last count % n
// elements belong to no chunk and are never reduced.
#define KNOWN_WRONG_CHUNK_OF
#include "ring_parts.inc"

lab10::Chunk lab10::chunk_of(std::size_t count, int n, int c) {
  const std::size_t q = count / static_cast<std::size_t>(n);
  return {static_cast<std::size_t>(c) * q, q};
}
