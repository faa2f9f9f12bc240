#include "net_counters.h"

#include <fstream>
#include <sstream>

#include "cerar/errors.h"

namespace cerar::bench {

NetCounters ReadNetCounters(const std::string& dev) {
  NetCounters c;
  std::ifstream devs("/proc/net/dev");
  std::string line;
  bool found = false;
  while (std::getline(devs, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream name(line.substr(0, colon));
    std::string n;
    name >> n;
    if (n != dev) continue;
    // receive: bytes packets errs drop fifo frame compressed multicast; transmit: bytes packets …
    std::istringstream f(line.substr(colon + 1));
    std::uint64_t v[10] = {0};
    for (auto& x : v) f >> x;
    if (!f) throw InvalidArgument("/proc/net/dev: cannot read the counters of " + dev);
    c.tx_bytes = v[8];
    c.tx_packets = v[9];
    found = true;
  }
  if (!found)
    throw InvalidArgument("--netdev " + dev + ": no such interface in this network namespace "
                          "(/proc/net/dev)");
  std::ifstream snmp("/proc/net/snmp");
  std::string header, values;
  while (std::getline(snmp, line)) {
    if (line.rfind("Tcp:", 0) != 0) continue;
    if (header.empty()) { header = line; continue; }
    values = line;
    break;
  }
  std::istringstream h(header), v(values);
  std::string key, val;
  while (h >> key && v >> val)
    if (key == "RetransSegs") c.retrans_segs = std::stoull(val);
  return c;
}

}  // namespace cerar::bench
