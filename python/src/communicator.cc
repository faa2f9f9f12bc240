// Communicator: cached all-reduce objects on one transport (see communicator.h).
#include "communicator.h"

#include "cerar/errors.h"

namespace cerar::python {

namespace {

// One 64-bit value for a call's key, the same in every process (splitmix64's finaliser).
std::uint64_t Mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

}  // namespace

Communicator::Communicator(std::unique_ptr<Transport> transport, std::size_t segment_bytes,
                           bool check_every_call)
    : transport_(std::move(transport)), segment_bytes_(segment_bytes),
      check_every_call_(check_every_call) {
  if (segment_bytes_ == 0) throw InvalidArgument("communicator: segment_bytes = 0, expected > 0");
}

Communicator::~Communicator() {
  // The all-reduce objects refer to the transport: destroy them first. After a failed run they
  // keep the buffers a transport may still write into (the engines abandon them, allreduce.h).
  cache_.clear();
}

Communicator::Entry& Communicator::Lookup(std::size_t count, DType dtype, const Design* design,
                                          bool average, Accumulation accumulation) {
  const Key key{count, int(dtype), int(average), design ? design->fingerprint() : 0,
                int(accumulation)};
  if (check_every_call_) {
    // On every call, cached or not, and first: a rank that reuses its cached object and one that
    // builds a new one then meet in the same check (they met in different checks, and each
    // rank's message told another story).
    std::uint64_t h = 0;
    for (std::uint64_t v : {std::uint64_t(count), std::uint64_t(dtype), std::uint64_t(average),
                            std::get<3>(key), std::uint64_t(accumulation)})
      h = Mix(h, v);
    transport_->CheckAgreement("all-reduce call (count, dtype, op, design, accumulation)", h);
  }
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  AllReduceOptions options;
  options.dtype = dtype;
  options.op = average ? ReduceOp::kAverage : ReduceOp::kSum;
  options.segment_bytes = segment_bytes_;
  options.accumulation = accumulation;
  Entry entry;
  entry.serial = ++builds_;
  if (design) {
    entry.backend = CreateCpuBackend();
    entry.coded =
        std::make_unique<CodedAllReduce>(*design, *transport_, *entry.backend, count, options);
  } else {
    entry.ring = std::make_unique<RingAllReduce>(*transport_, count, options);
  }
  return cache_.emplace(key, std::move(entry)).first->second;
}

void Communicator::AllReduce(void* buffer, std::size_t count, DType dtype, const Design* design,
                             bool average, Accumulation accumulation) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure_.empty())
    throw TransportError("communicator unusable after an earlier failure: " + failure_);
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64)
    throw InvalidArgument("all-reduce: dtype " + ToString(dtype) + ", expected f32 or f64 (CPU)");
  if (!design && accumulation != Accumulation::kBuffer)
    throw InvalidArgument("all-reduce: accumulation " + ToString(accumulation) +
                          " without a design: the exact ring all-reduce computes in the "
                          "buffer's dtype, use buffer");
  if (design && design->N() != size())
    throw InvalidArgument("all-reduce: the design is for N = " + std::to_string(design->N()) +
                          " ranks but the communicator has " + std::to_string(size()));
  try {
    Entry& entry = Lookup(count, dtype, design, average, accumulation);
    entry.used = true;
    if (entry.coded)
      entry.coded->Run(buffer);
    else
      entry.ring->Run(buffer);
  } catch (const TransportError& e) {
    SetFailure(e.what());
    throw;
  }
}

void Communicator::CheckAgreement(const std::string& what, std::uint64_t value) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure_.empty())
    throw TransportError("communicator unusable after an earlier failure: " + failure_);
  try {
    transport_->CheckAgreement(what, value);
  } catch (const TransportError& e) {
    SetFailure(e.what());
    throw;
  }
}

void Communicator::SetFailure(const std::string& what) {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  failure_ = what;
}

std::string Communicator::failure() const {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  return failure_;
}

void Communicator::EndStep() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = cache_.begin(); it != cache_.end();) {
    Entry& entry = it->second;
    entry.idle = entry.used ? 0 : entry.idle + 1;
    entry.used = false;
    if (entry.idle >= kEvictAfter)
      it = cache_.erase(it);
    else
      ++it;
  }
}

std::vector<CacheEntryInfo> Communicator::CacheInfo() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<CacheEntryInfo> out;
  for (const auto& [key, entry] : cache_) {
    CacheEntryInfo info;
    info.count = std::get<0>(key);
    info.dtype = ToString(DType(std::get<1>(key)));
    info.algorithm = entry.coded ? "coded" : "ring";
    info.accumulation = ToString(Accumulation(std::get<4>(key)));
    info.workspace_bytes =
        entry.coded ? entry.coded->workspace_bytes() : entry.ring->workspace_bytes();
    info.serial = entry.serial;
    out.push_back(info);
  }
  return out;
}

std::size_t Communicator::CacheBytes() const {
  std::size_t total = 0;
  for (const auto& info : CacheInfo()) total += info.workspace_bytes;
  return total;
}

}  // namespace cerar::python
