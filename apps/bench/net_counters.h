#pragma once
// What this rank put on its network interface, read from the kernel (Linux, per network
// namespace): the check that a run really crossed the emulated link and sent the bytes the
// traffic model says (scripts/netbench).
#include <cstdint>
#include <string>

namespace cerar::bench {

struct NetCounters {
  std::uint64_t tx_bytes = 0;    // frames as the interface counted them (headers included)
  std::uint64_t tx_packets = 0;  // one per frame, or per GSO super-frame
  std::uint64_t retrans_segs = 0;  // TCP segments sent again (whole namespace)
};

// Counters of interface `dev` from /proc/net/dev (and Tcp RetransSegs from /proc/net/snmp).
// Throws InvalidArgument naming the interface when it does not exist in this namespace.
NetCounters ReadNetCounters(const std::string& dev);

// Every TCP frame on the emulated link carries 14 (Ethernet) + 20 (IPv4) + 32 (TCP with the
// timestamp option, Linux's default) header bytes; a GSO super-frame is counted once with one
// header. So the TCP payload is tx_bytes - kFrameHeaderBytes * tx_packets (ACK-only frames count
// as header only).
inline constexpr std::uint64_t kFrameHeaderBytes = 66;
// The bytes the emulated link carries for `payload` bytes of TCP payload in full frames of
// MTU 1500 (MSS 1448 with timestamps): payload * 1514 / 1448. The rate limiter (tc tbf) charges
// frames, so this, not the payload, is what the link rate has to move.
inline double LinkBytesForPayload(double payload) { return payload * 1514.0 / 1448.0; }

}  // namespace cerar::bench
