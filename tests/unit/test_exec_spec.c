/* exec_spec: how exec's flags and --process file change the container's
 * process, as runc merges them, and the errors that name the flag or
 * field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec_spec.h"
#include "tap.h"

static const char config_json[] =
    "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\"},"
    "\"process\":{\"args\":[\"sleep\",\"9\"],\"cwd\":\"/\","
    "\"env\":[\"PATH=/bin\",\"A=1\"],"
    "\"user\":{\"uid\":5,\"gid\":6,\"additionalGids\":[7]},"
    "\"capabilities\":{\"bounding\":[\"CAP_KILL\"],\"effective\":[\"CAP_KILL\"]"
    ","
    "\"permitted\":[\"CAP_KILL\"],\"inheritable\":[\"CAP_KILL\","
    "\"CAP_NET_ADMIN\"]},"
    "\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":64,\"soft\":32}],"
    "\"noNewPrivileges\":false}}";

static struct coil_config *config(void) {
  struct coil_config *c = NULL;
  struct coil_error err;
  if (config_parse(config_json, strlen(config_json), &c, &err) < 0) {
    printf("Bail out! %s\n", err.msg);
    exit(1);
  }
  return c;
}

static char *args[] = {"id", "-u", NULL};

static void test_user(void) {
  struct coil_error err;
  uint32_t uid = 1, gid = 2;
  ok(exec_parse_user("10", &uid, &gid, &err) == 0 && uid == 10 && gid == 2,
     "UID alone keeps the gid");
  ok(exec_parse_user("0:0", &uid, &gid, &err) == 0 && uid == 0 && gid == 0,
     "UID:GID");
  const char *bad[] = {"",   "x",          "1:",          ":1",   "1:x",
                       "-1", "4294967295", "99999999999", "1:2:3"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    ok(exec_parse_user(bad[i], &uid, &gid, &err) < 0 &&
           strstr(err.msg, "--user"),
       "--user \"%s\" refused", bad[i]);
}

static void test_flags(void) {
  struct coil_config *c = config();
  const char *env[] = {"A=2", "B=3"};
  const char *gids[] = {"8"};
  const char *caps[] = {"CAP_NET_ADMIN", "cap_sys_admin"};
  struct exec_flags f = {.args = args,
                         .n_args = 2,
                         .cwd = "/tmp",
                         .env = env,
                         .n_env = 2,
                         .user = "1000",
                         .gids = gids,
                         .n_gids = 1,
                         .caps = caps,
                         .n_caps = 2,
                         .no_new_privs = true};
  struct exec_spec s;
  struct coil_error err;
  ok(exec_spec_build(&c->process, &f, &s, &err) == 0, "flags merge");
  is_str(s.p.args.v[0], "id", "args from the command line");
  ok(s.p.args.v[2] == NULL, "args NULL-terminated");
  is_str(s.p.cwd, "/tmp", "--cwd");
  ok(s.p.env.n == 4 && !strcmp(s.p.env.v[1], "A=1") &&
         !strcmp(s.p.env.v[2], "A=2") && s.p.env.v[4] == NULL,
     "--env appended after the config's");
  ok(s.p.uid == 1000 && s.p.gid == 6, "--user UID keeps the config's gid");
  ok(s.p.n_additional_gids == 2 && s.p.additional_gids[0] == 7 &&
         s.p.additional_gids[1] == 8,
     "--additional-gids appended");
  ok(s.p.no_new_privileges, "--no-new-privs");
  ok(!s.p.terminal, "no terminal without --tty");
  uint64_t kill = 1ULL << 5, net_admin = 1ULL << 12, sys_admin = 1ULL << 21;
  ok(s.caps.sets[COIL_CAP_BOUNDING] == (kill | net_admin | sys_admin) &&
         s.caps.sets[COIL_CAP_EFFECTIVE] == (kill | net_admin | sys_admin) &&
         s.caps.sets[COIL_CAP_PERMITTED] == (kill | net_admin | sys_admin),
     "--cap joins bounding, effective and permitted");
  ok(s.caps.sets[COIL_CAP_AMBIENT] == net_admin,
     "--cap joins ambient only where the config's inheritable has it");
  ok(s.rlimits.n == 1 && s.rlimits.lim[0].rlim_cur == 32,
     "rlimits from the config");
  exec_spec_free(&s);
  config_free(c);
}

static void test_flag_errors(void) {
  struct coil_config *c = config();
  const struct {
    struct exec_flags f;
    const char *word;
  } cases[] = {
      {{.args = args, .n_args = 2, .cwd = "tmp"}, "--cwd"},
      {{.args = args, .n_args = 2, .env = (const char *[]){"NOEQ"}, .n_env = 1},
       "--env \"NOEQ\""},
      {{.args = args, .n_args = 2, .env = (const char *[]){"=x"}, .n_env = 1},
       "--env"},
      {{.args = args, .n_args = 2, .gids = (const char *[]){"x"}, .n_gids = 1},
       "--additional-gids"},
      {{.args = args,
        .n_args = 2,
        .caps = (const char *[]){"CAP_NOPE"},
        .n_caps = 1},
       "--cap \"CAP_NOPE\": unknown capability"},
      {{.args = args, .n_args = 0}, "exec args cannot be empty"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct exec_spec s;
    struct coil_error err;
    int r = exec_spec_build(&c->process, &cases[i].f, &s, &err);
    ok(r < 0 && strstr(err.msg, cases[i].word), "refused: %s", cases[i].word);
    if (r == 0)
      exec_spec_free(&s);
  }
  config_free(c);
}

static const char *write_tmp(const char *text) {
  static char path[64];
  snprintf(path, sizeof path, "/tmp/coil-unit-process-XXXXXX");
  int fd = mkstemp(path);
  if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
    return NULL;
  close(fd);
  return path;
}

static void test_file(void) {
  struct coil_config *c = config();
  const char *path =
      write_tmp("{\"args\":[\"sh\"],\"cwd\":\"/srv\",\"terminal\":true,"
                "\"user\":{\"uid\":3,\"gid\":4},\"env\":[\"X=1\"]}");
  struct exec_flags f = {.process_file = path, .cwd = "/ignored"};
  struct exec_spec s;
  struct coil_error err;
  ok(exec_spec_build(&c->process, &f, &s, &err) == 0, "--process file");
  is_str(s.p.cwd, "/srv", "cwd from the file, --cwd ignored");
  ok(s.p.terminal && s.p.uid == 3 && s.p.gid == 4 && s.p.env.n == 1,
     "terminal, user and env from the file");
  ok(s.caps.configured && s.caps.sets[COIL_CAP_BOUNDING] == (1ULL << 5),
     "capabilities the file leaves out are the config's");
  ok(s.rlimits.n == 1, "rlimits the file leaves out are the config's");
  exec_spec_free(&s);
  unlink(path);

  const struct {
    const char *text, *word;
  } bad[] = {
      {"{\"args\":[\"sh\"]}", "process.cwd"},
      {"{\"args\":[\"sh\"],\"cwd\":\"rel\"}", "process.cwd"},
      {"{\"cwd\":\"/\"}", "process.args"},
      {"[1]", "expected object"},
      {"{", "invalid JSON"},
      {"{\"args\":[\"sh\"],\"cwd\":\"/\",\"capabilities\":{\"effective\":"
       "[\"CAP_KILL\"]}}",
       "process.capabilities.effective"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    path = write_tmp(bad[i].text);
    f = (struct exec_flags){.process_file = path};
    int r = exec_spec_build(&c->process, &f, &s, &err);
    ok(r < 0 && strstr(err.msg, bad[i].word) && strstr(err.msg, path),
       "bad --process names %s and the file", bad[i].word);
    if (r < 0 && !strstr(err.msg, bad[i].word))
      printf("#   got: %s\n", err.msg);
    if (r == 0)
      exec_spec_free(&s);
    unlink(path);
  }
  config_free(c);
}

int main(void) {
  test_user();
  test_flags();
  test_flag_errors();
  test_file();
  return tap_done();
}
