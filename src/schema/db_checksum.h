// Berkeley DB's checksum hash, computed many bytes at a time.
//
// Every log record Berkeley DB writes, and every page of a database opened with DB_CHKSUM as it
// leaves or enters the cache, is checksummed with __ham_func4: h = h * 33 + byte over the
// buffer, one byte per step, about 1 ns a byte. A served 4 KiB write logs 4 to 8 KiB, a page of
// the Data db is 64 KiB: the hash was the hottest function of the monitor (a third of an
// append). The sum is a polynomial in 33 modulo 2^32, so blocks of bytes can be weighed by
// powers of 33 independently; the result is bit for bit the library's.
//
// db_checksum.cc defines __ham_func4 itself, exported from every program that links the schema:
// libdb calls it through its PLT, so the dynamic linker binds those calls to this definition
// (tests/schema/checksum_test.cc checks both the values and the binding). A libdb built to bind
// its own calls directly would only lose the speed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace amino::schema {

// The hash of len bytes at data: the value __ham_func4 gives.
uint32_t DbChecksumHash(const void* data, size_t len);

// The two ways DbChecksumHash computes it (it picks the AVX2 one when the CPU has it); for tests.
uint32_t DbChecksumHashPortable(const void* data, size_t len);
uint32_t DbChecksumHashAvx2(const void* data, size_t len);
bool DbChecksumHasAvx2();

}  // namespace amino::schema
