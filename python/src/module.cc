// The extension module cerar._cerar: designs (load, figures, provenance, make with the toolkit),
// communicators (MPI or Python transport) with in-place all-reduce, MPI lifetime, and CERAR's
// exceptions as Python exceptions. The Python package (python/cerar) is the public face; names
// with a leading underscore are its internals.
#include <pybind11/eigen.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <exception>
#include <string>

#include "cerar/format/design.h"
#include "cerar/format/design_file.h"
#include "cerar/format/design_parts.h"
#include "cerar/errors.h"
#include "cerar/runtime/simulate.h"
#include "communicator.h"
#include "python_error.h"
#include "python_transport.h"
#ifdef CERAR_PYTHON_WITH_MPI
#include "mpi_env.h"
#endif
#ifdef CERAR_PYTHON_WITH_DESIGN
#include "cerar/design/cost.h"
#include "cerar/design/toolkit.h"
#endif

namespace py = pybind11;

namespace cerar::python {
namespace {

// torch/numpy names or the runtime's own (transport.h); CPU tensors are float32 or float64.
DType ParseDType(const std::string& name) {
  const std::string runtime_name = name == "float32" ? "f32" : name == "float64" ? "f64" : name;
  if (runtime_name != "f32" && runtime_name != "f64")
    throw InvalidArgument("dtype '" + name + "', expected float32 or float64 (CPU tensors)");
  return cerar::ParseDType(runtime_name);
}

py::dict FiguresDict(const Figures& f) {
  py::dict d;
  d["err_op"] = f.err_op;
  d["err_rms"] = f.err_rms;
  d["kappa_dec"] = f.kappa_dec;
  d["kappa_enc"] = f.kappa_enc;
  d["err_op_per_rank"] = f.err_op_per_rank;
  d["err_rms_per_rank"] = f.err_rms_per_rank;
  d["kappa_dec_per_rank"] = f.kappa_dec_per_rank;
  d["kappa_enc_per_rank"] = f.kappa_enc_per_rank;
  d["precision"] = f.precision;
  d["predicted_error"] = f.predicted_error;
  return d;
}

// The MPI transport's interrupt check: runs the interpreter's pending signal handlers, so that
// Ctrl-C's KeyboardInterrupt ends a wait that would otherwise only end at its timeout. The
// transport then fails and nests this exception in its TransportError; BindExceptions raises it
// again. Only Python's main thread runs handlers (elsewhere PyErr_CheckSignals does nothing), so
// other threads do not take the GIL here: a wait there could block on it past its timeout.
void CheckPythonSignals(unsigned long main_thread) {
  if (PyThread_get_thread_ident() != main_thread) return;
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw PythonException(py::error_already_set());
}

py::object OptionalFigures(const std::optional<Figures>& f) {
  if (!f) return py::none();
  return FiguresDict(*f);
}

void BindExceptions(py::module_& m) {
  // Registered base first: pybind11 tries the most recently registered translator first, so
  // each exception maps to its own class and the base catches the rest.
  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<InvalidArgument> invalid(m, "InvalidArgument", error.ptr());
  static py::exception<DesignError> design(m, "DesignError", error.ptr());
  static py::exception<IoError> io(m, "IoError", error.ptr());
  static py::exception<NumericalError> numerical(m, "NumericalError", error.ptr());
  static py::exception<TransportError> transport(m, "TransportError", error.ptr());
  static py::exception<DeviceError> device(m, "DeviceError", error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InvalidArgument& e) {
      PyErr_SetString(invalid.ptr(), e.what());
    } catch (const DesignError& e) {
      PyErr_SetString(design.ptr(), e.what());
    } catch (const IoError& e) {
      PyErr_SetString(io.ptr(), e.what());
    } catch (const NumericalError& e) {
      PyErr_SetString(numerical.ptr(), e.what());
    } catch (const TransportError& e) {
      // An interrupted wait (Ctrl-C) carries the Python exception that ended it: raise that
      // (KeyboardInterrupt), not a TransportError; the communicator has failed all the same.
      try {
        std::rethrow_if_nested(e);
      } catch (PythonException& interrupt) {
        interrupt.Restore();
        return;
      } catch (...) {  // another nested exception: the TransportError tells the story
      }
      PyErr_SetString(transport.ptr(), e.what());
    } catch (const DeviceError& e) {
      PyErr_SetString(device.ptr(), e.what());
    } catch (const Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
}

void BindDesign(py::module_& m) {
  py::class_<Design>(m, "_Design")
      .def_property_readonly("N", &Design::N)
      .def_property_readonly("c", &Design::c)
      .def_property_readonly("L", &Design::L)
      .def_property_readonly("fingerprint", &Design::fingerprint)
      .def_property_readonly("traffic_rate", &Design::traffic_rate)
      .def_property_readonly("ring_traffic_rate", &Design::ring_traffic_rate)
      .def_property_readonly("workspace_rate", &Design::workspace_rate)
      .def_property_readonly("figures", [](const Design& d) { return OptionalFigures(d.figures()); })
      .def_property_readonly("exact_figures",
                             [](const Design& d) { return OptionalFigures(d.exact_figures()); })
      .def_property_readonly("construction",
                             [](const Design& d) { return d.provenance().construction; })
      .def_property_readonly("shift_invariant",
                             [](const Design& d) { return d.provenance().shift_invariant; })
      .def_property_readonly("parameters_json",
                             [](const Design& d) { return d.provenance().parameters.dump(); })
      .def_property_readonly("notes", &Design::notes)
      .def("encoder", [](const Design& d, int rank) { return MatrixXd(d.encoder(rank)); })
      .def("decoder", [](const Design& d, int rank) { return MatrixXd(d.decoder(rank)); })
      .def("window", &Design::window)
      .def("to_json", &SerializeDesign)
      .def("save", [](const Design& d, const std::string& path) { SaveDesign(d, path); });
  m.def("_load_design", [](const std::string& path) { return LoadDesign(path); }, py::arg("path"));
  m.def("_parse_design", &ParseDesign, py::arg("text"), py::arg("source"));
  // The error model's arithmetic (the key of a design's predicted_error) for a run of `dtype`
  // buffers with `accumulation`: the runtime's own mapping, so Python cannot drift from it.
  m.def(
      "_model_arithmetic",
      [](const std::string& dtype, const std::string& accumulation) {
        return ModelArithmetic(ParseDType(dtype), ParseAccumulation(accumulation));
      },
      py::arg("dtype"), py::arg("accumulation"));
#ifdef CERAR_PYTHON_WITH_DESIGN
  m.attr("_with_toolkit") = true;
  m.attr("_default_max_digits") = design::kDefaultMaxDigits;
  // eps None: tune eps for the arithmetic (TuneEps); otherwise that eps (checked as given).
  m.def(
      "_make_design",
      [](const std::string& construction, int N, int c, std::optional<double> eps,
         const std::string& arithmetic, const std::string& precision, int max_digits) {
        py::gil_scoped_release release;
        const auto kind = design::ParseConstruction(construction);
        const auto prec = design::ParsePrecision(precision);
        if (!eps)
          return design::TuneEps(kind, N, c, design::ParseArithmetic(arithmetic), prec,
                                 max_digits)
              .design;
        design::ConstructionOptions o;
        o.construction = kind;
        o.N = N;
        o.c = c;
        o.eps = *eps;
        o.precision = prec;
        o.max_digits = max_digits;
        return design::MakeConstruction(o);
      },
      py::arg("construction"), py::arg("N"), py::arg("c"), py::arg("eps"), py::arg("arithmetic"),
      py::arg("precision"), py::arg("max_digits"));
  // The toolkit's cost model (cerar/design/cost.h): (seconds, bytes) of make_design, so that
  // Python refuses what cannot fit and warns of what takes long, as the CLI does.
  m.def(
      "_make_design_cost",
      [](int N, int c, bool tune, const std::string& precision) {
        // Outside the limits, (0, 0): the construction's own message names the limit.
        if (!WithinDesignLimits(N, c)) return std::pair{0.0, 0.0};
        const bool mp50 = design::ParsePrecision(precision) == design::Precision::kMp50;
        design::Cost cost = design::AnalysisCost(N, c, mp50);
        if (tune) cost.seconds += design::kTuneAnalyses * design::AnalysisCost(N, c, false).seconds;
        return std::pair{cost.seconds, cost.bytes};
      },
      py::arg("N"), py::arg("c"), py::arg("tune"), py::arg("precision"));
  m.def("_available_memory_bytes", &AvailableMemoryBytes);
  m.def("_predicted_error", [](const Design& d, const std::string& arithmetic) {
    return design::PredictedError(d, design::ParseArithmetic(arithmetic));
  });
#else
  m.attr("_with_toolkit") = false;
#endif
}

void BindCommunicator(py::module_& m) {
  py::class_<CacheEntryInfo>(m, "_CacheEntry")
      .def_readonly("count", &CacheEntryInfo::count)
      .def_readonly("dtype", &CacheEntryInfo::dtype)
      .def_readonly("algorithm", &CacheEntryInfo::algorithm)
      .def_readonly("workspace_bytes", &CacheEntryInfo::workspace_bytes)
      .def_readonly("accumulation", &CacheEntryInfo::accumulation)
      .def_readonly("serial", &CacheEntryInfo::serial)
      .def("__repr__", [](const CacheEntryInfo& e) {
        const std::string acc = e.accumulation == "buffer" ? "" : " " + e.accumulation;
        return "<" + e.algorithm + " " + e.dtype + acc + " x " + std::to_string(e.count) + ", " +
               std::to_string(e.workspace_bytes) + " B workspace>";
      });
  py::class_<Communicator>(m, "_Communicator")
      .def_property_readonly("rank", &Communicator::rank)
      .def_property_readonly("size", &Communicator::size)
      .def_property_readonly("bytes_sent", &Communicator::bytes_sent)
      .def_property_readonly("failure", &Communicator::failure)
      .def("reset_counters", &Communicator::ResetCounters)
      // address: a contiguous host buffer of count elements that the caller keeps alive.
      .def(
          "allreduce",
          [](Communicator& comm, std::uintptr_t address, std::size_t count,
             const std::string& dtype, const Design* design, bool average,
             const std::string& accumulation) {
            const DType t = ParseDType(dtype);
            const Accumulation a = ParseAccumulation(accumulation);
            if (address == 0 && count > 0)
              throw InvalidArgument("all-reduce: null buffer for " + std::to_string(count) +
                                    " elements");
            py::gil_scoped_release release;
            comm.AllReduce(reinterpret_cast<void*>(address), count, t, design, average, a);
          },
          py::arg("address"), py::arg("count"), py::arg("dtype"), py::arg("design"),
          py::arg("average"), py::arg("accumulation") = "buffer")
      .def(
          "check_agreement",
          [](Communicator& comm, const std::string& what, std::uint64_t value) {
            py::gil_scoped_release release;
            comm.CheckAgreement(what, value);
          },
          py::arg("what"), py::arg("value"))
      // Without the GIL: they wait for the lock an all-reduce on another thread holds, and that
      // all-reduce needs the GIL for a Python transport's callbacks (a deadlock otherwise).
      .def("end_step", &Communicator::EndStep, py::call_guard<py::gil_scoped_release>())
      .def("cache_info", &Communicator::CacheInfo, py::call_guard<py::gil_scoped_release>())
      .def("cache_bytes", &Communicator::CacheBytes, py::call_guard<py::gil_scoped_release>());

  m.def(
      "_python_communicator",
      [](py::object impl, int rank, int size, std::size_t segment_bytes, bool check_every_call) {
        return std::make_unique<Communicator>(CreatePythonTransport(std::move(impl), rank, size),
                                              segment_bytes, check_every_call);
      },
      py::arg("impl"), py::arg("rank"), py::arg("size"), py::arg("segment_bytes"),
      py::arg("check_every_call") = false);
#ifdef CERAR_PYTHON_WITH_MPI
  m.attr("_with_mpi") = true;
  m.def(
      "_mpi_communicator",
      [](double timeout_s, std::size_t segment_bytes, bool check_every_call) {
        const auto main_thread = py::module_::import("threading")
                                     .attr("main_thread")()
                                     .attr("ident")
                                     .cast<unsigned long>();
        return std::make_unique<Communicator>(
            CreateWorldMpiTransport(timeout_s, [main_thread] { CheckPythonSignals(main_thread); }),
            segment_bytes, check_every_call);
      },
      py::arg("timeout_s"), py::arg("segment_bytes"), py::arg("check_every_call") = false);
  m.def("_mpi_init", [] {
    const MpiState s = MpiInit();
    return py::make_tuple(s.rank, s.size);
  });
  m.def("_mpi_finalize", &MpiFinalize);
  m.def("_mpi_status", [] {
    const MpiState s = MpiStatus();
    py::dict d;
    d["initialized"] = s.initialized;
    d["finalized"] = s.finalized;
    d["owned"] = s.owned;
    d["rank"] = s.rank;
    d["size"] = s.size;
    return d;
  });
#else
  m.attr("_with_mpi") = false;
#endif
}

}  // namespace
}  // namespace cerar::python

PYBIND11_MODULE(_cerar, m) {
  m.doc() = "CERAR extension module (use the cerar package)";
  cerar::python::BindExceptions(m);
  cerar::python::BindDesign(m);
  cerar::python::BindCommunicator(m);
}
