#include "capi/mpi_loader.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include "korovod/c_api.h"

namespace korovod {

// korovod/runtime.h's build query: libkorovod_mpi.so was built and installed with this library.
bool mpi_built() {
  const std::string path = capi::mpi_plugin_path();
  return !path.empty() && access(path.c_str(), F_OK) == 0;
}

namespace capi {
namespace {

Result<const MpiPlugin*> plugin_from(void* library, const std::string& path) {
  auto entry = reinterpret_cast<const MpiPlugin* (*)()>(dlsym(library, kMpiPluginSymbol));
  if (!entry) return Status::unknown(fmt::format("{}: no symbol {}", path, kMpiPluginSymbol));
  const MpiPlugin* plugin = entry();
  if (plugin->abi_version != kMpiPluginAbiVersion) {
    return Status::unknown(fmt::format("{}: plugin ABI version {}, this libkorovod.so needs {} (a file from another build?)",
                                       path, plugin->abi_version, kMpiPluginAbiVersion));
  }
  return plugin;
}

}  // namespace

std::string mpi_launch_variable(const EnvMap& env) {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"}) {
    auto it = env.find(name);
    if (it != env.end() && !it->second.empty()) return name;
  }
  return "";
}

std::string mpi_plugin_path() {
  Dl_info info{};
  // Any function of this library locates the file it was loaded from.
  if (dladdr(reinterpret_cast<void*>(&korovod_version), &info) == 0 || !info.dli_fname) return "";
  const std::string self = info.dli_fname;
  const size_t slash = self.rfind('/');
  return (slash == std::string::npos ? std::string() : self.substr(0, slash + 1)) + kMpiPluginFile;
}

Result<const MpiPlugin*> load_mpi_plugin() {
  const std::string path = mpi_plugin_path();
  if (path.empty()) return Status::unknown("cannot tell which directory libkorovod.so was loaded from (dladdr failed)");
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
  if (!library) {
    const char* why = dlerror();
    return Status::unknown(why ? why : fmt::format("dlopen({}) failed", path));
  }
  return plugin_from(library, path);
}

const MpiPlugin* loaded_mpi_plugin() {
  const std::string path = mpi_plugin_path();
  void* library = path.empty() ? nullptr : dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!library) return nullptr;
  Result<const MpiPlugin*> plugin = plugin_from(library, path);
  dlclose(library);  // drops the reference RTLD_NOLOAD took; RTLD_NODELETE keeps it loaded
  return plugin.is_ok() ? *plugin : nullptr;
}

}  // namespace capi
}  // namespace korovod
