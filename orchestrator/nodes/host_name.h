// Host names as evidence: the one check every node name passes before baton stores it, shows it
// or hands it to SLURM (scontrol ExcNodeList=, sbatch --exclude=).
//
// A name comes from files anyone in the run folder can write (heartbeats, incident files, job
// logs) and from SLURM's output. Only RFC 1123 host names pass: labels of letters, digits and
// '-', joined by '.', each 1-63 bytes, not starting or ending with '-', at most 253 bytes in all.
// Nothing else (shell metacharacters, slashes, SLURM host-list brackets, spaces) is ever used.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace baton {

// Longest host name accepted (RFC 1123's 253, well under the 255-byte bound).
inline constexpr size_t kMaxHostNameBytes = 253;

bool ValidHostName(std::string_view name);

// "a,b,c" of valid names (for ExcNodeList= and --exclude=); the caller passes only names that
// ValidHostName accepted.
std::string JoinHostNames(const std::vector<std::string>& hosts);

}  // namespace baton
