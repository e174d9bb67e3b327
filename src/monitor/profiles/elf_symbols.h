// The functions an ELF object defines, by name (libelf): what function rules of a profile need
// to place breakpoints in a program and its shared libraries, with or without debug
// information (.symtab when present, .dynsym always).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace amino::monitor::profiles {

struct ElfFunctions {
  // The object's first loadable segment's address, page-aligned: the load bias of a mapping
  // is where that segment was mapped minus this.
  uint64_t first_load = 0;
  // Each loadable segment's file offset and address, both page-aligned: a mapping of the file
  // at offset O that is segment (O, V) has its load bias at (mapping start - V).
  std::vector<std::pair<uint64_t, uint64_t>> loads;
  // Defined functions whose names match one of the patterns asked for: name -> address in
  // the object (before the load bias). A name defined twice (.symtab and .dynsym) keeps one.
  std::map<std::string, uint64_t> functions;
};

// Reads `path`; false (with *error) when it is not an ELF object that can be read.
bool ReadElfFunctions(const std::string& path, const std::vector<std::string>& patterns,
                      ElfFunctions* out, std::string* error);

}  // namespace amino::monitor::profiles
