#include "monitor/profiles/elf_symbols.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace amino::monitor::profiles {

bool ReadElfFunctions(const std::string& path, const std::vector<std::string>& patterns,
                      ElfFunctions* out, std::string* error) {
  if (elf_version(EV_CURRENT) == EV_NONE) {
    *error = "libelf is out of date";
    return false;
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  bool ok = false;
  size_t phnum = 0;
  if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &phnum) != 0) {
    *error = path + ": not an ELF object";
  } else {
    bool found_load = false;
    const uint64_t page = ~static_cast<uint64_t>(getpagesize() - 1);
    for (size_t i = 0; i < phnum; ++i) {
      GElf_Phdr ph;
      if (!gelf_getphdr(elf, static_cast<int>(i), &ph) || ph.p_type != PT_LOAD) continue;
      if (!found_load) out->first_load = ph.p_vaddr & page;
      found_load = true;
      out->loads.emplace_back(ph.p_offset & page, ph.p_vaddr & page);
    }
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf, scn)) != nullptr) {
      GElf_Shdr sh;
      if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)) {
        continue;
      }
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (!data || sh.sh_entsize == 0) continue;
      const size_t count = sh.sh_size / sh.sh_entsize;
      for (size_t i = 0; i < count; ++i) {
        GElf_Sym sym;
        if (!gelf_getsym(data, static_cast<int>(i), &sym)) continue;
        if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
            sym.st_value == 0) {
          continue;
        }
        const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
        // Parts of a function the compiler moved away (foo.cold) are jumped into, not called.
        if (!name || !*name || std::strstr(name, ".cold")) continue;
        for (const std::string& p : patterns) {
          if (fnmatch(p.c_str(), name, 0) == 0) {
            out->functions.emplace(name, sym.st_value);
            break;
          }
        }
      }
    }
    ok = found_load;
    if (!ok) *error = path + ": no loadable segment";
  }
  if (elf) elf_end(elf);
  close(fd);
  return ok;
}

}  // namespace amino::monitor::profiles
