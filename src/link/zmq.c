/* zmq.c — the ZeroMQ link for split learning (TCP, optional CURVE). */
#include "link_internal.h"

int pz_zmq_available(void) { return 0; }
pz_status pz_link_zmq_listen(pz_link **l, const char *endpoint, const char *server_secret_file,
                             const char *client_public_file, const char *name) {
    (void)l, (void)endpoint, (void)server_secret_file, (void)client_public_file, (void)name;
    return pz_fail(PZ_ERR_ARG, "not yet");
}
pz_status pz_link_zmq_connect(pz_link **l, const char *endpoint, const char *client_secret_file,
                              const char *server_public_file, const char *name) {
    (void)l, (void)endpoint, (void)client_secret_file, (void)server_public_file, (void)name;
    return pz_fail(PZ_ERR_ARG, "not yet");
}
pz_status pz_zmq_keygen(const char *path) {
    (void)path;
    return pz_fail(PZ_ERR_ARG, "not yet");
}
