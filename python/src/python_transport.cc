// Transport over Python callables (see python_transport.h).
#include "python_transport.h"

#include <exception>
#include <string>

#include "cerar/errors.h"
#include "python_error.h"

namespace py = pybind11;

namespace cerar::python {
namespace {

class PythonTransport final : public Transport {
 public:
  PythonTransport(py::object impl, int rank, int size)
      : impl_(std::move(impl)), rank_(rank), size_(size) {
    if (size < 2 || rank < 0 || rank >= size)
      throw InvalidArgument("python transport: rank " + std::to_string(rank) + " of " +
                            std::to_string(size) + ", expected 0 <= rank < size and size >= 2");
  }

  ~PythonTransport() override {
    py::gil_scoped_acquire gil;
    pending_.clear();
    impl_ = py::object();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Handle StartExchange(const void* send, void* recv, std::size_t bytes) override {
    py::gil_scoped_acquire gil;
    py::object token = Call("start", [&] {
      return impl_.attr("start")(reinterpret_cast<std::uintptr_t>(send),
                                 reinterpret_cast<std::uintptr_t>(recv), bytes);
    });
    pending_.push_back(std::move(token));
    bytes_sent_ += bytes;
    return next_handle_++;
  }

  void Wait(Handle handle) override {
    if (handle >= next_handle_)
      throw InvalidArgument("python transport: rank " + std::to_string(rank_) +
                            " waits on exchange " + std::to_string(handle) + " never started");
    py::gil_scoped_acquire gil;
    while (completed_ <= handle) {
      py::object token = std::move(pending_.front());
      pending_.pop_front();
      ++completed_;
      Call("wait", [&] { return impl_.attr("wait")(token); });
    }
  }

  void CheckAgreement(const std::string& what, std::uint64_t value) override {
    py::gil_scoped_acquire gil;
    Call("check_agreement", [&] { return impl_.attr("check_agreement")(what, value); });
  }

  std::uint64_t bytes_sent() const override { return bytes_sent_; }
  void ResetCounters() override { bytes_sent_ = 0; }

 private:
  // Runs a Python call; its exception becomes a TransportError naming the rank and the call, so
  // the engine only ever sees C++ exceptions. One that is no Exception (KeyboardInterrupt from
  // Ctrl-C, SystemExit) is nested in it, so that the caller gets it back (module.cc) while the
  // communicator fails as for any TransportError.
  template <typename F>
  py::object Call(const char* name, F&& f) {
    try {
      return f();
    } catch (py::error_already_set& e) {
      const std::string message = "rank " + std::to_string(rank_) + ": python transport " + name +
                                  " failed: " + DescribePythonError(e);
      if (e.matches(PyExc_Exception)) throw TransportError(message);
      try {
        throw PythonException(e);
      } catch (const PythonException&) {
        std::throw_with_nested(TransportError(message));
      }
    }
  }

  py::object impl_;
  int rank_, size_;
  std::deque<py::object> pending_;
  Handle next_handle_ = 0, completed_ = 0;
  std::uint64_t bytes_sent_ = 0;
};

}  // namespace

std::unique_ptr<Transport> CreatePythonTransport(py::object impl, int rank, int size) {
  return std::make_unique<PythonTransport>(std::move(impl), rank, size);
}

}  // namespace cerar::python
