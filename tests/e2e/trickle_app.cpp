// A BOINC API application for the trickle end-to-end test, built against Debian's
// libboinc-app-dev: it sends three trickle-ups a few seconds apart (the client names each
// trickle file by the second it moved it), then waits for one trickle-down and writes
// its content to out.txt.
#include <boinc/boinc_api.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <unistd.h>

// The API's timer signal cuts sleep() short: sleep until a deadline instead.
static void pause_for(int seconds) {
    time_t until = time(nullptr) + seconds;
    while (time(nullptr) < until) usleep(100000);
}

static std::string read_all(const char* path) {
    std::string text;
    FILE* f = fopen(path, "r");
    if (!f) return text;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
    fclose(f);
    return text;
}

int main(int argc, char** argv) {
    int wait_seconds = argc > 1 ? atoi(argv[1]) : 120;
    boinc_init();
    char variety[] = "runtime";
    for (int i = 1; i <= 3; i++) {
        char body[128];
        snprintf(body, sizeof(body), "<step>%d</step>\n<runtime>2</runtime>\n", i);
        boinc_send_trickle_up(variety, body);
        boinc_fraction_done(i * 0.2);
        pause_for(3);
    }
    std::string received;
    char name[256];
    time_t give_up = time(nullptr) + wait_seconds;
    while (received.empty() && time(nullptr) < give_up) {
        if (boinc_receive_trickle_down(name, sizeof(name))) {
            received = read_all(name);
            unlink(name);
        } else {
            pause_for(1);
        }
    }
    std::string out_path;
    boinc_resolve_filename_s("out.txt", out_path);
    FILE* out = boinc_fopen(out_path.c_str(), "w");
    if (!out) boinc_finish(1);
    fprintf(out, "trickle-down: %s\n", received.empty() ? "(none)" : received.c_str());
    fclose(out);
    fprintf(stderr, "trickle app done\n");
    boinc_finish(received.empty() ? 2 : 0);
    return 0;
}
