#pragma once
// The regular files inside a tar archive held in memory (the decompressed cifar-10-binary.tar.gz).
//
// Why our own ~100 lines rather than libarchive: we only need to find a few regular files in an archive that
// is already decompressed in memory (zlib does the gzip), the format is 512-byte headers with octal sizes,
// and parsing bytes we hold keeps the reader fuzzable without another dependency. Handled: POSIX ustar and
// old GNU/v7 headers, the ustar name prefix, GNU long names ('L') and pax "path" records ('x'); every other
// entry type (directories, links, global pax headers) is skipped. Header checksums are verified.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace engine::data {

struct TarMember {
  std::string name;                    // the full path inside the archive, e.g. "cifar-10-batches-bin/x.bin"
  std::span<const std::uint8_t> data;  // points into the archive bytes: valid while they are
};

// Every regular file in `archive`, in archive order. Throws engine::Error naming `source` for a header whose
// checksum is wrong (including "not a tar archive at all"), an unreadable size, or a member that runs past
// the end of the archive.
std::vector<TarMember> list_tar(std::span<const std::uint8_t> archive, const std::string& source);

}  // namespace engine::data
