#pragma once
// A Python exception carried through the C++ engine. A transport nests it in the TransportError
// that ends a run (std::throw_with_nested): the communicator fails as for any TransportError, and
// the module's exception translator raises the Python exception again, so that Ctrl-C reaches
// the caller as KeyboardInterrupt, not as a TransportError.
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace cerar::python {

// The exception's type and text, without pybind11's traceback and "<EMPTY MESSAGE>" (what()
// adds both). Needs the GIL.
inline std::string DescribePythonError(const pybind11::error_already_set& e) {
  std::string text = pybind11::str(e.type().attr("__name__"));
  const std::string value = pybind11::str(e.value());
  if (!value.empty()) text += ": " + value;
  return text;
}

class PythonException : public std::runtime_error {
 public:
  // Needs the GIL. pybind11 takes it itself to free the error, so this may be destroyed anywhere.
  explicit PythonException(pybind11::error_already_set error)
      : std::runtime_error(DescribePythonError(error)), error_(std::move(error)) {}
  // Sets it as the current Python error; with the GIL, once.
  void Restore() { error_.restore(); }

 private:
  pybind11::error_already_set error_;
};

}  // namespace cerar::python
