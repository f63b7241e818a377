/* SPDX-License-Identifier: MIT */
/* cmd_serve.c — `pipezip serve` (the server side of split learning) and
 * `pipezip keygen` (CURVE key pairs for it). */
#include "cli.h"
#include "args.h"
#include "run/run.h"

#include <stdio.h>
#include <string.h>

static const char serve_usage[] =
    "Usage: pipezip serve [OPTIONS]\n"
    "\n"
    "Split learning over ZeroMQ: run the stages after the first cut (the upper\n"
    "layers and the loss) for clients that hold the lower layers and the data.\n"
    "Clients run `pipezip train --link zmq --connect tcp://HOST:PORT` with the same\n"
    "model, cuts, codecs, batch and optimizer flags; labels travel with the\n"
    "activations. One client is served at a time; with --clients N the server\n"
    "ends once N clients have finished. Clients take turns as they ask (a\n"
    "client's `--turn epoch` or `--turn K` gives the next one its turn after\n"
    "every epoch or K steps), each starting from the client-side weights the\n"
    "previous one left. Nothing a peer sends ends the server: a client that\n"
    "breaks the protocol, runs other settings, dies or stays silent for\n"
    "--timeout is told why (when it can hear), dropped, and the server's\n"
    "stages go back to the state the last completed session left.\n"
    "\n"
    "Example:\n"
    "  pipezip keygen server.key; pipezip keygen client.key\n"
    "  pipezip serve --cuts layer1 --bind tcp://0.0.0.0:5555 --server-key server.key --client-key client.key.pub\n"
    "  pipezip train --cuts layer1 --link zmq --connect tcp://server:5555 --client-key client.key --server-key server.key.pub\n";

static int serve(pz_run_plan *plan, int argc, char **argv) {
    pz_serve_options so = {.bind = "tcp://0.0.0.0:5555", .clients = 1, .save_dir = "serve-checkpoints"};
    double max_mb = 0;
    /* the server's own options, then the settings it shares with its clients (run/settings.c's rows) */
    const pz_opt opts[] = {
        {"bind", OPT_STR, &so.bind, "ENDPOINT", "where to listen", 0, 0, NULL},
        {"clients", OPT_INT, &so.clients, "N", "serve until N clients have finished (a client that dropped out counts), then exit", 1, 1000000, NULL},
        {"server-key", OPT_STR, &so.server_key, "FILE", "this server's CURVE secret key (pipezip keygen): encrypt and authenticate", 0, 0, NULL},
        {"client-key", OPT_STR, &so.client_key, "FILE", "the public key (FILE.pub) of the client allowed in", 0, 0, NULL},
        {"checkpoint-dir", OPT_STR, &so.save_dir, "DIR", "where the server's stages write their checkpoints (DIR/epoch-E, when a client checkpoints)", 0, 0, NULL},
        {"resume", OPT_STR, &so.resume, "DIR", "start the server's stages from a checkpoint, e.g. serve-checkpoints/epoch-3 (with a client resuming the same epoch)", 0, 0, NULL},
        cli_setting_opt(plan, PZ_SET_MODEL, "model preset (as the clients)"),
        cli_setting_opt(plan, PZ_SET_DATA, "the clients' dataset (for its input shape; the server holds no data)"),
        cli_setting_opt(plan, PZ_SET_STAGES, "stages balanced by compute (stage 0 is the client's; default as pipezip train)"),
        cli_setting_opt(plan, PZ_SET_CUTS, "cut after these layers (the first cut is the client/server split)"),
        cli_setting_opt(plan, PZ_SET_FWD, "activation codecs per boundary"),
        cli_setting_opt(plan, PZ_SET_BWD, "gradient codecs per boundary"),
        cli_setting_opt(plan, PZ_SET_BATCH, "largest batch the clients send"),
        cli_setting_opt(plan, PZ_SET_MICRO_BATCHES, "GPipe micro-batches (as the clients)"),
        cli_setting_opt(plan, PZ_SET_OPTIMIZER, NULL),
        cli_setting_opt(plan, PZ_SET_MOMENTUM, NULL),
        cli_setting_opt(plan, PZ_SET_NESTEROV, NULL),
        cli_setting_opt(plan, PZ_SET_WEIGHT_DECAY, "weight decay"),
        cli_setting_opt(plan, PZ_SET_TOKENIZER, "the clients' tokenizer (bytes or bpe:N: its vocabulary)"),
        cli_setting_opt(plan, PZ_SET_GRAD_MASK, "as the clients: fwd zeroes each boundary gradient where its activation arrived as 0"),
        cli_setting_opt(plan, PZ_SET_CLIP_NORM, "clip the gradients' global norm (as the clients)"),
        cli_setting_opt(plan, PZ_SET_SUBSPACE, "as the clients: a GPT whose boundaries carry K numbers per token and the ids"),
        cli_setting_opt(plan, PZ_SET_LR, "accepted for symmetry with the clients and ignored: their learning rate travels with every batch"),
        cli_setting_opt(plan, PZ_SET_SCHEDULE, "accepted and ignored, as --lr"),
        cli_setting_opt(plan, PZ_SET_SEED, "seed for the server-side initialisation (as the clients)"),
        cli_setting_opt(plan, PZ_SET_THREADS, NULL),
        cli_setting_opt(plan, PZ_SET_TIMEOUT, "a client silent this long in its session is dropped (its session rolled back)"),
        {"wait-for", OPT_INT, &so.wait_for, "N", "begin the first turn only once N clients have asked (a round robin from the start)", 0, 1000000, NULL},
        {"max-message", OPT_FLOAT64, &max_mb, "MB", "refuse messages above this size (default: the most the model's clients can need)", 0, 1e9, NULL},
    };
    int rc = pz_parse_args("pipezip serve", opts, (int)(sizeof opts / sizeof *opts), argc, argv, 2, serve_usage, NULL, 0, NULL);
    if (rc == 1) return 0;
    if (rc) return 2;
    if (!pz_run_uses_pipeline(plan)) {
        fprintf(stderr, "pipezip serve: no cut, nothing to serve: give the split, --cuts LAYER (e.g. layer1) or --stages S >= 2\n");
        return 2;
    }
    so.max_message = (size_t)(max_mb * 1e6);
    pz_status st = pz_run_serve(plan, &so);
    if (st) {
        fprintf(stderr, "pipezip serve: %s\n", pz_last_error());
        return st == PZ_ERR_ARG ? 2 : 1;
    }
    fprintf(stderr, "pipezip serve: served %d client%s\n", so.clients, so.clients == 1 ? "" : "s");
    return 0;
}

int cmd_serve(int argc, char **argv) {
    pz_run_plan *plan;
    if (pz_run_plan_create(&plan)) {
        fprintf(stderr, "pipezip serve: %s\n", pz_last_error());
        return 1;
    }
    const int rc = serve(plan, argc, argv);
    pz_run_plan_free(plan);
    return rc;
}

static const char keygen_usage[] =
    "Usage: pipezip keygen [--force] FILE\n"
    "\n"
    "Make a CURVE key pair for pipezip serve / train --link zmq: FILE holds the\n"
    "secret key (mode 0600, keep it), FILE.pub the public key (give it to the\n"
    "other side). An existing FILE or FILE.pub is never replaced unless --force.\n";

int cmd_keygen(int argc, char **argv) {
    char *pos[1];
    int npos = 0, force = 0;
    const pz_opt opts[] = {{"force", OPT_BOOL, &force, NULL, "replace existing key files", 0, 0, NULL}};
    int rc = pz_parse_args("pipezip keygen", opts, 1, argc, argv, 2, keygen_usage, pos, 1, &npos);
    if (rc == 1) return 0;
    if (rc) return 2;
    if (npos != 1) {
        fprintf(stderr, "pipezip keygen: expected one FILE\n%s", keygen_usage);
        return 2;
    }
    const pz_status st = pz_run_keygen(pos[0], force);
    if (st) {
        fprintf(stderr, "pipezip keygen: %s\n", pz_last_error());
        return st == PZ_ERR_ARG ? 2 : 1;
    }
    printf("secret key: %s\npublic key: %s.pub\n", pos[0], pos[0]);
    return 0;
}
