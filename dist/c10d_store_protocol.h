#pragma once
// The wire format of PyTorch's c10d TCPStore (torch/csrc/distributed/c10d/TCPStoreBackend.hpp and
// TCPStore.cpp): the contract between our store client, our store server and torchrun's agent store.
//
// A connection starts with VALIDATE (the query byte, then the u32 magic; no reply). Every later request is
// one query byte followed by its arguments; integers are in the host's byte order (little-endian on every
// machine PyTorch supports), strings and byte vectors are a u64 length then the bytes:
//
//   SET         key, value                      no reply
//   GET         key                             value (the key must exist: clients WAIT first)
//   ADD         key, i64 delta                  i64 new value (the value is stored as decimal text)
//   CHECK       u64 n, n keys                   u8 CheckResponse (READY when every key is set)
//   WAIT        u64 n, n keys                   u8 STOP_WAITING once every key is set (no timeout on the
//   wire) CANCEL_WAIT                                 u8 WAIT_CANCELED (a STOP_WAITING may come first: a
//   race) PING        u32 nonce                       the same u32 (PyTorch >= 2.5; we use it to make sure
//   the
//                                               peer is a TCPStore and not another service)
//
// Keys are at most kMaxKeyBytes and values at most kMaxValueBytes (the limits of PyTorch's libuv server).
// The numbering below is PyTorch's; the ones we neither send nor serve are listed to keep it.

#include <cstddef>
#include <cstdint>

namespace engine::dist::c10d {

inline constexpr std::uint32_t kValidationMagic = 0x3C85F7CE;
inline constexpr std::size_t kMaxKeyBytes = 8 * 1024;
inline constexpr std::size_t kMaxValueBytes = 8 * 1024 * 1024;
inline constexpr std::size_t kMaxKeysPerQuery = 128 * 1024;

enum class Query : std::uint8_t {
  Validate = 0,
  Set = 1,
  CompareSet = 2,
  Get = 3,
  Add = 4,
  Check = 5,
  Wait = 6,
  GetNumKeys = 7,
  DeleteKey = 8,
  Append = 9,
  MultiGet = 10,
  MultiSet = 11,
  CancelWait = 12,
  Ping = 13,
};

enum class CheckResponse : std::uint8_t { Ready = 0, NotReady = 1 };
enum class WaitResponse : std::uint8_t { StopWaiting = 0, WaitCanceled = 1 };

}  // namespace engine::dist::c10d
