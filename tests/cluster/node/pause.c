/* The test node's pause image (tests/cluster/node): the process that holds a pod sandbox's
 * namespaces. It sleeps until SIGTERM or SIGINT (then exits 0) and, as PID 1 of a sandbox that
 * shares its PID namespace, reaps the zombies re-parented to it. Built with gcc -static. */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) {
  (void)sig;
  _exit(0);
}

static void on_child(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction stop = {0}, child = {0};
  stop.sa_handler = on_stop;
  sigaction(SIGTERM, &stop, NULL);
  sigaction(SIGINT, &stop, NULL);
  child.sa_handler = on_child;
  child.sa_flags = SA_NOCLDSTOP | SA_RESTART;
  sigaction(SIGCHLD, &child, NULL);
  for (;;) pause();
}
