#pragma once
// Typed exceptions for every CERAR library. Messages name the thing, the value and the rule,
// e.g. "design file N8_c16.json: E[3] has 21 rows, expected 22 = c + N - 2".
#include <stdexcept>
#include <string>

namespace cerar {

// Base of every exception CERAR throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A caller passed a value outside its rule (N < 2, c < 1, eps NaN, count mismatch, ...).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// A design (in memory or in a file) breaks the contract of PROTOCOL.md or the file format.
class DesignError : public Error {
 public:
  using Error::Error;
};

// Reading or writing a file failed (missing, unreadable, unwritable, not JSON, ...).
class IoError : public Error {
 public:
  using Error::Error;
};

// Numerical failure: singular system, non-finite result, precision not sufficient.
class NumericalError : public Error {
 public:
  using Error::Error;
};

// A transport failed: peer died, timeout, MPI/NCCL error, ranks disagree.
class TransportError : public Error {
 public:
  using Error::Error;
};

// A CUDA, cuBLAS or NCCL call failed; the message carries the call text and file:line.
class DeviceError : public Error {
 public:
  using Error::Error;
};

}  // namespace cerar
