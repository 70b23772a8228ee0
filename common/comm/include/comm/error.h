// Errors raised by the communicator. Library code throws comm::Error carrying the file:line
// of the failing call and the transport's own message; only main() decides to exit.
#pragma once

#include <stdexcept>
#include <string>

namespace comm {

class Error : public std::runtime_error {
 public:
  Error(const char* file, int line, const std::string& what)
      : std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what) {}
};

/// Thrown by lab skeletons for a step the learner has not written yet.
class NotImplemented : public Error {
 public:
  NotImplemented(const char* file, int line, const std::string& function)
      : Error(file, line, "not implemented yet: " + function), function_(function) {}
  const std::string& function() const { return function_; }

 private:
  std::string function_;
};

}  // namespace comm

#define COMM_NOT_IMPLEMENTED(function) throw ::comm::NotImplemented(__FILE__, __LINE__, (function))
#define COMM_THROW(msg) throw ::comm::Error(__FILE__, __LINE__, (msg))
#define COMM_REQUIRE(cond, msg)             \
  do {                                      \
    if (!(cond)) COMM_THROW(std::string(msg)); \
  } while (0)
