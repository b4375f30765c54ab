// korovod_rendezvous_* (c_api.h): the job's rendezvous store hosted by a caller that starts the
// ranks itself, over korovod::host_rendezvous (korovod/tcp.h).
#include <memory>
#include <string>

#include "capi/capi_internal.h"
#include "korovod/c_api.h"
#include "korovod/tcp.h"

struct korovod_rendezvous {
  std::unique_ptr<korovod::RendezvousHost> host;
};

using korovod::capi::code_of;
using korovod::capi::copy_text;

extern "C" {

int korovod_rendezvous_start(korovod_rendezvous** out, const char* listen_host, int port, const char* job_secret,
                             char* error_text, int error_len) {
  if (out) *out = nullptr;
  if (!out || !listen_host || !job_secret) {
    copy_text("korovod_rendezvous_start: out, listen_host and job_secret must not be NULL", error_text, error_len);
    return KOROVOD_ERR_INVALID_ARGUMENT;
  }
  korovod::Result<std::unique_ptr<korovod::RendezvousHost>> host =
      korovod::host_rendezvous(listen_host, port, job_secret);
  if (!host.is_ok()) {
    copy_text(host.status().message(), error_text, error_len);
    return code_of(host.status());
  }
  *out = new korovod_rendezvous{std::move(host).value()};
  copy_text("", error_text, error_len);
  return KOROVOD_OK;
}

int korovod_rendezvous_port(const korovod_rendezvous* r) { return r ? r->host->port() : -1; }

void korovod_rendezvous_stop(korovod_rendezvous* r) { delete r; }

}  // extern "C"
