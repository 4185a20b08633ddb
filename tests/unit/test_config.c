/* config.json parsing: every field read back, unknown keys ignored, and every
 * error naming its JSON path. JSON is written with ' for " to stay readable. */
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "tap.h"
#include "testutil.h"

static char json_buf[8192];

/* The literal with ' turned into ". */
static const char *J(const char *s) {
  size_t i = 0;
  for (; s[i] && i < sizeof json_buf - 1; i++)
    json_buf[i] = s[i] == '\'' ? '"' : s[i];
  json_buf[i] = '\0';
  return json_buf;
}

#define BASE "'ociVersion':'1.0.2','root':{'path':'rootfs'}"
#define WITH(frag) "{" BASE "," frag "}"
#define PROC(frag) WITH("'process':{'args':['sh'],'cwd':'/'," frag "}")
#define LNX(frag) WITH("'linux':{" frag "}")

static struct coil_config *parse_ok(const char *sq, const char *name) {
  struct coil_config *c = NULL;
  struct coil_error err = {0};
  const char *s = J(sq);
  int r = config_parse(s, strlen(s), &c, &err);
  ok(r == 0 && c, "accepts %s", name);
  if (r != 0)
    printf("#   error: %s\n", err.msg);
  return c;
}

static void expect_buf(const char *buf, size_t len, const char *want) {
  struct coil_config *c = (struct coil_config *)1;
  struct coil_error err = {0};
  int r = config_parse(buf, len, &c, &err);
  ok(r == -1 && c == NULL && strstr(err.msg, want) && !strchr(err.msg, '\n'),
     "rejects with '%s'", want);
  if (r == 0)
    config_free(c);
  else if (!strstr(err.msg, want))
    printf("#   got: %s\n", err.msg);
}

static void expect_error(const char *sq, const char *want) {
  const char *s = J(sq);
  expect_buf(s, strlen(s), want);
}

static void test_full(void) {
  struct coil_config *c = parse_ok(
      "{'ociVersion':'1.2.0',"
      "'root':{'path':'rootfs','readonly':true},"
      "'process':{'terminal':true,'consoleSize':{'height':24,'width':80},"
      " 'user':{'uid':1000,'gid':1001,'umask':18,'additionalGids':[5,6]},"
      " 'args':['python3','-c','print(1)'],'env':['PATH=/usr/bin','LANG=C'],"
      " 'cwd':'/home',"
      " 'capabilities':{'bounding':['CAP_KILL'],'effective':['CAP_KILL',"
      "  'CAP_CHOWN'],'inheritable':[],'permitted':['CAP_KILL'],"
      "  'ambient':['CAP_NET_BIND_SERVICE']},"
      " 'rlimits':[{'type':'RLIMIT_NOFILE','hard':1024,'soft':512},"
      "  {'type':'RLIMIT_CORE','hard':18446744073709551615,'soft':0}],"
      " 'noNewPrivileges':true,'oomScoreAdj':-500,"
      " 'apparmorProfile':'coil-default','selinuxLabel':'system_u:r:t:s0'},"
      "'hostname':'sandbox','domainname':'example.org',"
      "'mounts':[{'destination':'/proc','type':'proc','source':'proc'},"
      " {'destination':'/tmp','type':'tmpfs','source':'tmpfs',"
      "  'options':['nosuid','size=64m']},{'destination':'/x'}],"
      "'hooks':{'prestart':[{'path':'/bin/true'}],"
      " 'createRuntime':[{'path':'/usr/bin/hook','args':['hook','create'],"
      "  'env':['A=1'],'timeout':5}],"
      " 'createContainer':[{'path':'/c'}],'startContainer':[{'path':'/s'}],"
      " 'poststart':[{'path':'/p1'},{'path':'/p2'}],"
      " 'poststop':[{'path':'/z'}]},"
      "'annotations':{'org.example.key':'v1','b':'v2'},"
      "'linux':{"
      " 'namespaces':[{'type':'pid'},{'type':'network','path':'/proc/1/ns/"
      "net'},"
      "  {'type':'mount'},{'type':'ipc'},{'type':'uts'},{'type':'user'},"
      "  {'type':'cgroup'},{'type':'time'}],"
      " 'uidMappings':[{'containerID':0,'hostID':100000,'size':65536}],"
      " 'gidMappings':[{'containerID':0,'hostID':200000,'size':1000},"
      "  {'containerID':1000,'hostID':4294967295,'size':1}],"
      " 'sysctl':{'net.ipv4.ip_forward':'0'},"
      " 'resources':{'memory':{'limit':268435456,'reservation':-1,'swap':-1},"
      "  'pids':{'limit':64},'cpu':{'shares':512,'quota':50000,"
      "  'period':100000,'idle':1,'cpus':'0-1','mems':'0'},"
      "  'hugepageLimits':[{'pageSize':'2MB','limit':0}],"
      "  'devices':[{'allow':false,'access':'rwm'}],'blockIO':{'weight':10}},"
      " 'cgroupsPath':'coil/test',"
      " 'seccomp':{'defaultAction':'SCMP_ACT_ERRNO','defaultErrnoRet':1,"
      "  'architectures':['SCMP_ARCH_X86_64'],"
      "  'flags':['SECCOMP_FILTER_FLAG_SPEC_ALLOW'],"
      "  'syscalls':[{'names':['read','write'],'action':'SCMP_ACT_ALLOW'},"
      "   {'names':['personality'],'action':'SCMP_ACT_ERRNO','errnoRet':38,"
      "    'args':[{'index':0,'value':18446744073709551615,"
      "     'valueTwo':9223372036854775808,'op':'SCMP_CMP_MASKED_EQ'},"
      "     {'index':5,'value':-0,'op':'SCMP_CMP_EQ'}]}]},"
      " 'rootfsPropagation':'rprivate',"
      " 'maskedPaths':['/proc/kcore'],'readonlyPaths':['/proc/sys','/proc/"
      "bus'],"
      " 'devices':[{'path':'/dev/null','type':'c','major':1,'minor':3,"
      "  'fileMode':438,'uid':0,'gid':5},{'path':'/dev/fifo','type':'p'}],"
      " 'mountLabel':'system_u:object_r:t:s0'},"
      "'sandbox':{'python':{'code':'/app/handler.py','entry':'handle'},"
      " 'disable':['seccomp','ast']}}",
      "a config with every supported field");
  if (!c)
    return;

  is_str(c->oci_version, "1.2.0", "ociVersion");
  is_str(c->root_path, "rootfs", "root.path");
  ok(c->root_readonly, "root.readonly");

  const struct coil_process *p = &c->process;
  ok(c->has_process && p->terminal, "process.terminal");
  ok(p->has_console_size && p->console_height == 24 && p->console_width == 80,
     "process.consoleSize");
  ok(p->uid == 1000 && p->gid == 1001, "process.user uid/gid");
  ok(p->has_umask && p->umask == 18, "process.user.umask");
  ok(p->n_additional_gids == 2 && p->additional_gids[0] == 5 &&
         p->additional_gids[1] == 6,
     "process.user.additionalGids");
  ok(p->args.n == 3 && p->args.v[3] == NULL, "process.args: 3, NULL-ended");
  is_str(p->args.v[0], "python3", "process.args[0]");
  is_str(p->args.v[2], "print(1)", "process.args[2]");
  ok(p->env.n == 2 && p->env.v[2] == NULL, "process.env count");
  is_str(p->env.v[1], "LANG=C", "process.env[1]");
  is_str(p->cwd, "/home", "process.cwd");
  ok(p->has_capabilities, "process.capabilities present");
  for (int s = 0; s < COIL_CAP_SET_COUNT; s++)
    ok(p->has_caps[s], "capability set %d present", s);
  ok(p->caps[COIL_CAP_EFFECTIVE].n == 2, "effective has 2");
  is_str(p->caps[COIL_CAP_EFFECTIVE].v[1], "CAP_CHOWN", "effective[1]");
  ok(p->caps[COIL_CAP_INHERITABLE].n == 0 && p->caps[COIL_CAP_INHERITABLE].v &&
         p->caps[COIL_CAP_INHERITABLE].v[0] == NULL,
     "empty inheritable set: n 0, v NULL-ended");
  is_str(p->caps[COIL_CAP_AMBIENT].v[0], "CAP_NET_BIND_SERVICE", "ambient[0]");
  is_str(p->caps[COIL_CAP_BOUNDING].v[0], "CAP_KILL", "bounding[0]");
  is_str(p->caps[COIL_CAP_PERMITTED].v[0], "CAP_KILL", "permitted[0]");
  ok(p->n_rlimits == 2, "two rlimits");
  is_str(p->rlimits[0].type, "RLIMIT_NOFILE", "rlimits[0].type");
  ok(p->rlimits[0].hard == 1024 && p->rlimits[0].soft == 512,
     "rlimits[0] hard/soft");
  ok(p->rlimits[1].hard == UINT64_MAX && p->rlimits[1].soft == 0,
     "rlimits[1].hard is 2^64-1");
  ok(p->no_new_privileges, "noNewPrivileges");
  ok(p->has_oom_score_adj && p->oom_score_adj == -500, "oomScoreAdj");
  is_str(p->apparmor_profile, "coil-default", "apparmorProfile");
  is_str(p->selinux_label, "system_u:r:t:s0", "selinuxLabel");

  is_str(c->hostname, "sandbox", "hostname");
  is_str(c->domainname, "example.org", "domainname");
  ok(c->n_mounts == 3, "three mounts");
  is_str(c->mounts[1].destination, "/tmp", "mounts[1].destination");
  is_str(c->mounts[1].type, "tmpfs", "mounts[1].type");
  is_str(c->mounts[1].source, "tmpfs", "mounts[1].source");
  ok(c->mounts[1].options.n == 2, "mounts[1].options count");
  is_str(c->mounts[1].options.v[1], "size=64m", "mounts[1].options[1]");
  ok(c->mounts[2].type == NULL && c->mounts[2].source == NULL &&
         c->mounts[2].options.n == 0,
     "absent mount fields stay NULL/empty");

  ok(c->hooks[COIL_HOOK_PRESTART].n == 1, "one prestart hook");
  const struct coil_hook *h = &c->hooks[COIL_HOOK_CREATE_RUNTIME].items[0];
  is_str(h->path, "/usr/bin/hook", "createRuntime[0].path");
  ok(h->args.n == 2 && h->env.n == 1, "createRuntime[0] args/env");
  ok(h->has_timeout && h->timeout == 5, "createRuntime[0].timeout");
  ok(!c->hooks[COIL_HOOK_PRESTART].items[0].has_timeout, "no timeout");
  is_str(c->hooks[COIL_HOOK_CREATE_CONTAINER].items[0].path, "/c",
         "createContainer");
  is_str(c->hooks[COIL_HOOK_START_CONTAINER].items[0].path, "/s",
         "startContainer");
  ok(c->hooks[COIL_HOOK_POSTSTART].n == 2, "two poststart hooks");
  is_str(c->hooks[COIL_HOOK_POSTSTOP].items[0].path, "/z", "poststop");

  ok(c->n_annotations == 2, "two annotations");
  is_str(c->annotations[0].key, "org.example.key", "annotation key");
  is_str(c->annotations[0].value, "v1", "annotation value");

  const struct coil_linux *l = &c->lnx;
  ok(c->has_linux && l->n_namespaces == 8, "eight namespaces");
  static const int flags[] = {CLONE_NEWPID,    CLONE_NEWNET, CLONE_NEWNS,
                              CLONE_NEWIPC,    CLONE_NEWUTS, CLONE_NEWUSER,
                              CLONE_NEWCGROUP, CLONE_NEWTIME};
  for (size_t i = 0; i < 8 && i < l->n_namespaces; i++)
    ok(l->namespaces[i].clone_flag == flags[i], "namespace %s clone flag",
       l->namespaces[i].type);
  is_str(l->namespaces[1].path, "/proc/1/ns/net", "namespaces[1].path");
  ok(l->namespaces[0].path == NULL, "namespaces[0].path NULL");
  ok(l->n_uid_mappings == 1 && l->uid_mappings[0].container_id == 0 &&
         l->uid_mappings[0].host_id == 100000 &&
         l->uid_mappings[0].size == 65536,
     "uidMappings");
  ok(l->n_gid_mappings == 2 && l->gid_mappings[1].host_id == UINT32_MAX,
     "gidMappings[1].hostID is 2^32-1");
  ok(l->n_sysctl == 1, "one sysctl");
  is_str(l->sysctl[0].key, "net.ipv4.ip_forward", "sysctl key");
  is_str(l->sysctl[0].value, "0", "sysctl value");

  const struct coil_resources *r = &l->resources;
  ok(l->has_resources, "resources present");
  ok(r->has_memory_limit && r->memory_limit == 268435456, "memory.limit");
  ok(r->has_memory_reservation && r->memory_reservation == -1,
     "memory.reservation -1");
  ok(r->has_memory_swap && r->memory_swap == -1, "memory.swap -1");
  ok(r->has_pids_limit && r->pids_limit == 64, "pids.limit");
  ok(r->has_cpu_shares && r->cpu_shares == 512, "cpu.shares");
  ok(r->has_cpu_quota && r->cpu_quota == 50000, "cpu.quota");
  ok(r->has_cpu_period && r->cpu_period == 100000, "cpu.period");
  ok(r->has_cpu_idle && r->cpu_idle == 1, "cpu.idle");
  is_str(r->cpu_cpus, "0-1", "cpu.cpus");
  is_str(r->cpu_mems, "0", "cpu.mems");
  ok(r->n_hugepage_limits == 1 && r->hugepage_limits[0].limit == 0,
     "hugepageLimits");
  is_str(r->hugepage_limits[0].page_size, "2MB", "hugepageLimits[0].pageSize");
  is_str(l->cgroups_path, "coil/test", "cgroupsPath");

  const struct coil_seccomp *sc = &l->seccomp;
  ok(l->has_seccomp, "seccomp present");
  is_str(sc->default_action, "SCMP_ACT_ERRNO", "seccomp.defaultAction");
  ok(sc->has_default_errno_ret && sc->default_errno_ret == 1,
     "seccomp.defaultErrnoRet");
  is_str(sc->architectures.v[0], "SCMP_ARCH_X86_64", "architectures[0]");
  is_str(sc->flags.v[0], "SECCOMP_FILTER_FLAG_SPEC_ALLOW", "flags[0]");
  ok(sc->n_syscalls == 2 && sc->syscalls[0].names.n == 2, "syscalls");
  is_str(sc->syscalls[0].action, "SCMP_ACT_ALLOW", "syscalls[0].action");
  ok(!sc->syscalls[0].has_errno_ret, "syscalls[0] without errnoRet");
  const struct coil_seccomp_syscall *sy = &sc->syscalls[1];
  ok(sy->has_errno_ret && sy->errno_ret == 38, "syscalls[1].errnoRet");
  ok(sy->n_args == 2 && sy->args[0].index == 0, "syscalls[1].args");
  ok(sy->args[0].value == UINT64_MAX, "args[0].value is 2^64-1");
  ok(sy->args[0].value_two == 9223372036854775808ull,
     "args[0].valueTwo is 2^63");
  is_str(sy->args[0].op, "SCMP_CMP_MASKED_EQ", "args[0].op");
  ok(sy->args[1].index == 5 && sy->args[1].value == 0 &&
         sy->args[1].value_two == 0,
     "args[1]: -0 is 0, absent valueTwo is 0");

  is_str(l->rootfs_propagation, "rprivate", "rootfsPropagation");
  ok(l->masked_paths.n == 1 && l->readonly_paths.n == 2, "masked/readonly");
  is_str(l->readonly_paths.v[1], "/proc/bus", "readonlyPaths[1]");
  ok(l->n_devices == 2, "two devices");
  const struct coil_device *d = &l->devices[0];
  is_str(d->path, "/dev/null", "devices[0].path");
  is_str(d->type, "c", "devices[0].type");
  ok(d->major == 1 && d->minor == 3, "devices[0] major/minor");
  ok(d->has_file_mode && d->file_mode == 438, "devices[0].fileMode");
  ok(d->has_uid && d->uid == 0 && d->has_gid && d->gid == 5,
     "devices[0] uid/gid");
  ok(!l->devices[1].has_file_mode && !l->devices[1].has_uid,
     "devices[1] without mode/uid");
  is_str(l->mount_label, "system_u:object_r:t:s0", "mountLabel");

  ok(c->sandbox.present && c->sandbox.has_python, "sandbox.python present");
  is_str(c->sandbox.python_code, "/app/handler.py", "sandbox.python.code");
  is_str(c->sandbox.python_entry, "handle", "sandbox.python.entry");
  ok(c->sandbox.disable.n == 2, "sandbox.disable count");
  is_str(c->sandbox.disable.v[1], "ast", "sandbox.disable[1]");
  config_free(c);
}

static void test_minimal(void) {
  struct coil_config *c = parse_ok("{" BASE "}", "the minimal config");
  if (!c)
    return;
  ok(!c->has_process && !c->has_linux && !c->sandbox.present &&
         !c->root_readonly && c->n_mounts == 0 && c->hostname == NULL &&
         c->hooks[COIL_HOOK_PRESTART].n == 0,
     "absent sections read as absent");
  config_free(c);

  c = parse_ok(
      WITH("'sandbox':{'python':{'code':'/a.py'}},"
           "'linux':{'resources':{'pids':{'limit':-9223372036854775808}}}"),
      "sandbox without entry, int64 minimum");
  if (!c)
    return;
  ok(c->sandbox.present && c->sandbox.has_python &&
         c->sandbox.python_entry == NULL && c->sandbox.disable.n == 0,
     "sandbox.python.entry absent");
  ok(c->lnx.resources.pids_limit == INT64_MIN, "pids.limit is INT64_MIN");
  ok(!c->lnx.resources.has_memory_limit && !c->lnx.resources.has_cpu_shares,
     "absent resources have no has_ flag");
  config_free(c);

  c = parse_ok("{'ociVersion':'1.0.0-rc5','root':{'path':'r'}}",
               "a 1.0.0-rc version");
  config_free(c);
}

static void test_unknown_ignored(void) {
  struct coil_config *c = parse_ok(
      "{" BASE ",'vm':{'hypervisor':{'path':5,'a':1,'a':2}},'windows':[1,2],"
      "'process':{'args':['sh'],'cwd':'/','commandLine':7,'ioPriority':{},"
      " 'user':{'uid':1,'gid':2,'username':'x'},"
      " 'capabilities':{'bogus':[1]},'scheduler':{'policy':'SCHED_OTHER'}},"
      "'linux':{'intelRdt':{},'personality':{'domain':'LINUX'},"
      " 'resources':{'network':{'classID':1},'rdma':{},"
      "  'memory':{'checkBeforeUpdate':1.5,'useHierarchy':'x','limit':10}},"
      " 'seccomp':{'defaultAction':'SCMP_ACT_ALLOW','listenerPath':'/x',"
      "  "
      "'syscalls':[{'names':['read'],'action':'SCMP_ACT_ALLOW','comment':1}]},"
      " 'namespaces':[{'type':'pid','extra':null}]},"
      "'sandbox':{'landlock':{'rules':[]},'python':{'code':'/c','x':1}},"
      "'mounts':[{'destination':'/a','uidMappings':[]}],"
      "'hooks':{'prestop':[{'path':5}]},'solaris':{}}",
      "unknown keys at every level, duplicates inside unknown objects");
  if (!c)
    return;
  ok(c->process.uid == 1 && c->process.gid == 2, "known keys still read");
  ok(c->lnx.resources.has_memory_limit && c->lnx.resources.memory_limit == 10,
     "memory.limit beside unknown keys");
  ok(c->lnx.n_namespaces == 1 && c->n_mounts == 1, "arrays beside unknowns");
  config_free(c);
}

/* A valid config whose unknown key "x" takes it to depth levels of nesting. */
static void nested(char *buf, size_t cap, int depth) {
  size_t n = (size_t)snprintf(buf, cap, "{%s,'x':", BASE);
  for (int i = 1; i < depth && n < cap - 2; i++)
    buf[n++] = '[';
  for (int i = 1; i < depth && n < cap - 2; i++)
    buf[n++] = ']';
  buf[n++] = '}';
  buf[n] = '\0';
}

static void test_document_errors(void) {
  expect_buf("", 0, "config.json: empty document, expected an object");
  expect_error("  \n\t ", "config.json: empty document");
  expect_error("[]", "(root): expected object");
  expect_error("42", "(root): expected object");
  expect_error("{", "config.json: invalid JSON: parse error: premature EOF");
  expect_error("{'a' x}", "config.json: invalid JSON: lexical error");
  expect_error("{} {}", "config.json: invalid JSON: parse error: trailing");
  expect_error("{/* c */}", "config.json: invalid JSON: comment at offset 1");
  expect_buf("{\"a\":1}\0{", 9,
             "config.json: invalid JSON: NUL byte at offset 7");
  expect_error("{'ociVersion':'1.0.0\\u0000x'}",
               "config.json: \\u0000 at offset 20 is not supported");

  char deep[256];
  nested(deep, sizeof deep, 64);
  struct coil_config *c = parse_ok(deep, "nesting 64 levels deep");
  config_free(c);
  nested(deep, sizeof deep, 65);
  expect_error(deep, "config.json: nested deeper than 64 levels at offset");

  /* A quote inside a string must not end it: the '/' is not a comment. */
  c = parse_ok("{" BASE ",'hostname':'a\\\"/b'}", "escaped quote in a string");
  if (c)
    is_str(c->hostname, "a\"/b", "escaped quote read back");
  config_free(c);
}

static void test_field_errors(void) {
  expect_error("{'root':{'path':'r'}}", "ociVersion: required");
  expect_error("{'ociVersion':'2.0.0','root':{'path':'r'}}",
               "ociVersion: unsupported version \"2.0.0\", expected 1.x");
  expect_error("{'ociVersion':'10.0','root':{}}",
               "ociVersion: unsupported version \"10.0\"");
  expect_error("{'ociVersion':'1','root':{'path':'r'}}",
               "ociVersion: unsupported version \"1\"");
  expect_error("{'ociVersion':1.0,'root':{'path':'r'}}",
               "ociVersion: expected string");
  expect_error("{'ociVersion':'1.0.0'}", "root: required");
  expect_error("{'ociVersion':'1.0.0','root':'r'}", "root: expected object");
  expect_error("{'ociVersion':'1.0.0','root':{}}", "root.path: required");
  expect_error("{'ociVersion':'1.0.0','root':{'path':''}}",
               "root.path: must not be empty");
  expect_error("{'ociVersion':'1.0.0','root':{'path':'r','readonly':'yes'}}",
               "root.readonly: expected boolean");
  expect_error("{" BASE ",'ociVersion':'1.0.0'}", "ociVersion: duplicate key");
  expect_error(WITH("'hostname':7"), "hostname: expected string");
  expect_error(WITH("'domainname':null"), "domainname: expected string");

  expect_error(WITH("'process':null"), "process: expected object");
  expect_error(WITH("'process':{'args':['a','b',3],'cwd':'/'}"),
               "process.args[2]: expected string");
  expect_error(WITH("'process':{'cwd':'/'}"), "process.args: required");
  expect_error(WITH("'process':{'args':[],'cwd':'/'}"),
               "process.args: must not be empty");
  expect_error(WITH("'process':{'args':'sh','cwd':'/'}"),
               "process.args: expected array");
  expect_error(WITH("'process':{'args':['sh']}"), "process.cwd: required");
  expect_error(WITH("'process':{'args':['sh'],'cwd':'home'}"),
               "process.cwd: \"home\" is not an absolute path");
  expect_error(PROC("'cwd':'/'"), "process.cwd: duplicate key");
  expect_error(WITH("'process':{'args':['sh'],'cwd':'a\\nb\\''}"),
               "process.cwd: \"a?b?\" is not an absolute path");
  expect_error("{'ociVersion':'0.1234567890123456789012345678901234567890"
               "123456789012345678901234567890','root':{'path':'r'}}",
               "ociVersion: unsupported version \"0.12345678901234567890123456"
               "78901234567890123456789012345678...\", expected 1.x");
  expect_error(PROC("'env':['A=1',{}]"), "process.env[1]: expected string");
  expect_error(PROC("'terminal':'true'"), "process.terminal: expected boolean");
  expect_error(PROC("'consoleSize':{'height':1}"),
               "process.consoleSize.width: required");
  expect_error(PROC("'user':{'uid':-1,'gid':0}"),
               "process.user.uid: -1 out of range [0, 4294967295]");
  expect_error(PROC("'user':{'uid':4294967296,'gid':0}"),
               "process.user.uid: 4294967296 out of range [0, 4294967295]");
  expect_error(PROC("'user':{'uid':0,'gid':1.5}"),
               "process.user.gid: expected integer");
  expect_error(PROC("'user':{'uid':0,'gid':1.0}"),
               "process.user.gid: expected integer");
  expect_error(PROC("'user':{'uid':1e3,'gid':0}"),
               "process.user.uid: expected integer");
  expect_error(PROC("'user':{'uid':'0','gid':0}"),
               "process.user.uid: expected integer");
  expect_error(PROC("'user':{'uid':0}"), "process.user.gid: required");
  expect_error(PROC("'user':{'uid':0,'gid':0,'umask':-18}"),
               "process.user.umask: -18 out of range");
  expect_error(PROC("'user':{'uid':0,'gid':0,'additionalGids':[1,'2']}"),
               "process.user.additionalGids[1]: expected integer");
  expect_error(PROC("'user':{'uid':0,'gid':0,'additionalGids':[1,-2]}"),
               "process.user.additionalGids[1]: -2 out of range");
  expect_error(PROC("'capabilities':{'bounding':[7]}"),
               "process.capabilities.bounding[0]: expected string");
  expect_error(PROC("'capabilities':{'ambient':'CAP_KILL'}"),
               "process.capabilities.ambient: expected array");
  expect_error(PROC("'rlimits':[{'hard':1,'soft':1}]"),
               "process.rlimits[0].type: required");
  expect_error(PROC("'rlimits':[{'type':'RLIMIT_NOFILE','hard':-1,'soft':1}]"),
               "process.rlimits[0].hard: -1 out of range [0, "
               "18446744073709551615]");
  expect_error(PROC("'rlimits':[{'type':'RLIMIT_NOFILE','hard':1,"
                    "'soft':18446744073709551616}]"),
               "process.rlimits[0].soft: 18446744073709551616 out of range");
  expect_error(PROC("'rlimits':[{'type':'RLIMIT_NOFILE','hard':1}]"),
               "process.rlimits[0].soft: required");
  expect_error(PROC("'rlimits':{}"), "process.rlimits: expected array");
  expect_error(PROC("'oomScoreAdj':1001"),
               "process.oomScoreAdj: 1001 out of range [-1000, 1000]");
  expect_error(PROC("'noNewPrivileges':1"),
               "process.noNewPrivileges: expected boolean");

  expect_error(WITH("'mounts':{}"), "mounts: expected array");
  expect_error(WITH("'mounts':[{'destination':'/a'},{'type':'tmpfs'}]"),
               "mounts[1].destination: required");
  expect_error(WITH("'mounts':[{'destination':'tmp'}]"),
               "mounts[0].destination: \"tmp\" is not an absolute path");
  expect_error(WITH("'mounts':[{'destination':'/a','options':['ro',1]}]"),
               "mounts[0].options[1]: expected string");
  expect_error(WITH("'mounts':['/a']"), "mounts[0]: expected object");

  expect_error(WITH("'hooks':[]"), "hooks: expected object");
  expect_error(WITH("'hooks':{'poststop':[{'args':['x']}]}"),
               "hooks.poststop[0].path: required");
  expect_error(WITH("'hooks':{'createRuntime':[{'path':'hook'}]}"),
               "hooks.createRuntime[0].path: \"hook\" is not an absolute path");
  expect_error(WITH("'hooks':{'prestart':[{'path':'/h','timeout':0}]}"),
               "hooks.prestart[0].timeout: 0 out of range [1, 2147483647]");
  expect_error(WITH("'hooks':{'startContainer':[{'path':'/h','env':'A=1'}]}"),
               "hooks.startContainer[0].env: expected array");

  expect_error(WITH("'annotations':[]"), "annotations: expected object");
  expect_error(WITH("'annotations':{'org.x':1}"),
               "annotations[\"org.x\"]: expected string");
  expect_error(WITH("'annotations':{'a\\n\\'b':true}"),
               "annotations[\"a??b\"]: expected string");
  expect_error(WITH("'annotations':{'a.b':'1','a.b':'2'}"),
               "annotations[\"a.b\"]: duplicate key");
}

static void test_linux_errors(void) {
  expect_error(WITH("'linux':[]"), "linux: expected object");
  expect_error(LNX("'namespaces':[{'type':'pid'},{'type':'net'}]"),
               "linux.namespaces[1].type: \"net\" is not one of: pid, "
               "network, mount, ipc, uts, user, cgroup, time");
  expect_error(LNX("'namespaces':[{'path':'/proc/1/ns/pid'}]"),
               "linux.namespaces[0].type: required");
  expect_error(LNX("'namespaces':[{'type':'pid'},{'type':'uts'},"
                   "{'type':'pid','path':'/x'}]"),
               "linux.namespaces[2].type: duplicate namespace \"pid\"");
  expect_error(LNX("'namespaces':[{'type':'network','path':'ns/net'}]"),
               "linux.namespaces[0].path: \"ns/net\" is not an absolute path");
  expect_error(LNX("'uidMappings':[{'containerID':0,'hostID':1000}]"),
               "linux.uidMappings[0].size: required");
  expect_error(LNX("'gidMappings':[{'containerID':0,'hostID':-5,'size':1}]"),
               "linux.gidMappings[0].hostID: -5 out of range");
  expect_error(LNX("'sysctl':{'net.ipv4.ip_forward':0}"),
               "linux.sysctl[\"net.ipv4.ip_forward\"]: expected string");
  expect_error(LNX("'resources':{'memory':{'limit':'1G'}}"),
               "linux.resources.memory.limit: expected integer");
  expect_error(LNX("'resources':{'memory':{'limit':1.5}}"),
               "linux.resources.memory.limit: expected integer");
  expect_error(LNX("'resources':{'memory':{'limit':-2}}"),
               "linux.resources.memory.limit: -2 out of range [-1, "
               "9223372036854775807]");
  expect_error(LNX("'resources':{'memory':{'swap':9223372036854775808}}"),
               "linux.resources.memory.swap: 9223372036854775808 out of range");
  expect_error(LNX("'resources':{'memory':{'reservation':true}}"),
               "linux.resources.memory.reservation: expected integer");
  expect_error(LNX("'resources':{'memory':{'swappiness':101}}"),
               "linux.resources.memory.swappiness: 101 is not in 0-100");
  expect_error(LNX("'resources':{'memory':{'disableOOMKiller':1}}"),
               "linux.resources.memory.disableOOMKiller: expected boolean");
  expect_error(LNX("'resources':{'memory':{'kernelTCP':-2}}"),
               "linux.resources.memory.kernelTCP: -2 out of range [-1, "
               "9223372036854775807]");
  expect_error(LNX("'resources':{'pids':{}}"),
               "linux.resources.pids.limit: required");
  expect_error(LNX("'resources':{'cpu':{'shares':-1}}"),
               "linux.resources.cpu.shares: -1 out of range");
  expect_error(LNX("'resources':{'cpu':{'quota':-2}}"),
               "linux.resources.cpu.quota: -2 out of range");
  expect_error(LNX("'resources':{'cpu':{'idle':2}}"),
               "linux.resources.cpu.idle: 2 out of range [0, 1]");
  expect_error(LNX("'resources':{'cpu':{'idle':true}}"),
               "linux.resources.cpu.idle: expected integer");
  expect_error(LNX("'resources':{'cpu':{'cpus':[0]}}"),
               "linux.resources.cpu.cpus: expected string");
  expect_error(LNX("'resources':{'hugepageLimits':[{'limit':1}]}"),
               "linux.resources.hugepageLimits[0].pageSize: required");
  expect_error(LNX("'cgroupsPath':1"), "linux.cgroupsPath: expected string");
  expect_error(LNX("'seccomp':{'syscalls':[]}"),
               "linux.seccomp.defaultAction: required");
  expect_error(LNX("'seccomp':{'defaultAction':'SCMP_ACT_ALLOW',"
                   "'defaultErrnoRet':-1}"),
               "linux.seccomp.defaultErrnoRet: -1 out of range");
  expect_error(LNX("'seccomp':{'defaultAction':'A','architectures':[1]}"),
               "linux.seccomp.architectures[0]: expected string");
  expect_error(
      LNX("'seccomp':{'defaultAction':'A','syscalls':[{'action':'B'}]}"),
      "linux.seccomp.syscalls[0].names: required");
  expect_error(LNX("'seccomp':{'defaultAction':'A','syscalls':[{'names':[],"
                   "'action':'B'}]}"),
               "linux.seccomp.syscalls[0].names: must not be empty");
  expect_error(LNX("'seccomp':{'defaultAction':'A','syscalls':[{'names':"
                   "['read']}]}"),
               "linux.seccomp.syscalls[0].action: required");
  expect_error(LNX("'seccomp':{'defaultAction':'A','syscalls':[{'names':"
                   "['read'],'action':'B','args':[{'index':0,'value':"
                   "18446744073709551616,'op':'SCMP_CMP_EQ'}]}]}"),
               "linux.seccomp.syscalls[0].args[0].value: 18446744073709551616 "
               "out of range [0, 18446744073709551615]");
  expect_error(LNX("'seccomp':{'defaultAction':'A','syscalls':[{'names':"
                   "['read'],'action':'B','args':[{'index':0,'value':1,"
                   "'valueTwo':-1,'op':'SCMP_CMP_EQ'}]}]}"),
               "linux.seccomp.syscalls[0].args[0].valueTwo: -1 out of range");
  expect_error(LNX("'seccomp':{'defaultAction':'A','syscalls':[{'names':"
                   "['read'],'action':'B','args':[{'index':0,'value':1}]}]}"),
               "linux.seccomp.syscalls[0].args[0].op: required");
  expect_error(LNX("'seccomp':{'defaultAction':'A','syscalls':[{'names':"
                   "['read'],'action':'B','args':[{'value':1,'op':'X'}]}]}"),
               "linux.seccomp.syscalls[0].args[0].index: required");
  expect_error(LNX("'rootfsPropagation':'recursive'"),
               "linux.rootfsPropagation: \"recursive\" is not one of: shared");
  expect_error(LNX("'maskedPaths':['/proc/kcore','proc/keys']"),
               "linux.maskedPaths[1]: \"proc/keys\" is not an absolute path");
  expect_error(LNX("'readonlyPaths':'/proc'"),
               "linux.readonlyPaths: expected array");
  expect_error(LNX("'devices':[{'path':'/dev/x','type':'c','minor':1}]"),
               "linux.devices[0].major: required for type \"c\"");
  expect_error(LNX("'devices':[{'path':'/dev/x','type':'b','major':1}]"),
               "linux.devices[0].minor: required for type \"b\"");
  expect_error(LNX("'devices':[{'path':'/dev/x','type':'x'}]"),
               "linux.devices[0].type: \"x\" is not one of: c, b, u, p");
  expect_error(LNX("'devices':[{'type':'p'}]"),
               "linux.devices[0].path: required");
  expect_error(LNX("'devices':[{'path':'/d','type':'c','major':-1,'minor':0}]"),
               "linux.devices[0].major: -1 out of range");
  expect_error(LNX("'mountLabel':{}"), "linux.mountLabel: expected string");
}

static void test_sandbox_errors(void) {
  expect_error(WITH("'sandbox':true"), "sandbox: expected object");
  expect_error(WITH("'sandbox':{'python':{'entry':'h'}}"),
               "sandbox.python.code: required");
  expect_error(WITH("'sandbox':{'python':{'code':5}}"),
               "sandbox.python.code: expected string");
  expect_error(WITH("'sandbox':{'python':{'code':''}}"),
               "sandbox.python.code: must not be empty");
  expect_error(WITH("'sandbox':{'python':{'code':'/c','entry':''}}"),
               "sandbox.python.entry: must not be empty");
  expect_error(WITH("'sandbox':{'python':'/c.py'}"),
               "sandbox.python: expected object");
  expect_error(WITH("'sandbox':{'disable':['seccomp','selinux']}"),
               "sandbox.disable[1]: \"selinux\" is not one of: userns, pidns, "
               "netns, mountns, cgroup, rlimits, rlimit-memory, caps, "
               "landlock, seccomp, audit, builtins, ast");
  expect_error(WITH("'sandbox':{'disable':'seccomp'}"),
               "sandbox.disable: expected array");
}

static void write_file(const char *path, const char *content) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd >= 0) {
    ssize_t w = write(fd, content, strlen(content));
    (void)w;
    close(fd);
  }
}

static void expect_file_error(const char *path, const char *want) {
  struct coil_config *c = (struct coil_config *)1;
  struct coil_error err = {0};
  int r = config_parse_file(path, &c, &err);
  ok(r == -1 && c == NULL && strstr(err.msg, want), "file rejected: '%s'",
     want);
  if (r == -1 && !strstr(err.msg, want))
    printf("#   got: %s\n", err.msg);
}

static void test_files(void) {
  char dir[] = "/tmp/coil-test-config-XXXXXX";
  if (!mkdtemp(dir)) {
    ok(0, "mkdtemp");
    return;
  }
  char path[256], want[512];

  snprintf(path, sizeof path, "%s/good.json", dir);
  write_file(path, J("{" BASE ",'hostname':'h'}"));
  struct coil_config *c = NULL;
  struct coil_error err = {0};
  /* ok() evaluates its condition twice: no side effects inside. */
  int r = config_parse_file(path, &c, &err);
  ok(r == 0 && c, "parses a file");
  if (c)
    is_str(c->hostname, "h", "file content read back");
  config_free(c);

  snprintf(path, sizeof path, "%s/field.json", dir);
  write_file(path, J(PROC("'env':[1]")));
  snprintf(want, sizeof want, "%s: process.env[0]: expected string", path);
  expect_file_error(path, want);

  snprintf(path, sizeof path, "%s/syntax.json", dir);
  write_file(path, "{\"ociVersion\":\n");
  snprintf(want, sizeof want, "%s: invalid JSON: parse error", path);
  expect_file_error(path, want);

  snprintf(path, sizeof path, "%s/empty.json", dir);
  write_file(path, "");
  snprintf(want, sizeof want, "%s: empty document", path);
  expect_file_error(path, want);

  snprintf(path, sizeof path, "%s/missing.json", dir);
  snprintf(want, sizeof want, "open %s: No such file or directory", path);
  expect_file_error(path, want);

  snprintf(want, sizeof want, "%s: not a regular file", dir);
  expect_file_error(dir, want);

  snprintf(path, sizeof path, "%s/huge.json", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  r = fd >= 0 ? ftruncate(fd, (16 << 20) + 1) : -1;
  ok(r == 0, "sparse 16 MiB + 1 file");
  if (fd >= 0)
    close(fd);
  snprintf(want, sizeof want, "%s: larger than 16 MiB", path);
  expect_file_error(path, want);

  const char *names[] = {"good", "field", "syntax", "empty", "huge"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(path, sizeof path, "%s/%s.json", dir, names[i]);
    unlink(path);
  }
  rmdir(dir);
}

static int free_null_config(const void *arg, char *out, size_t len) {
  (void)arg, (void)out, (void)len;
  config_free(NULL);
  return 0;
}

static void test_hook_names(void) {
  is_str(config_hook_name(COIL_HOOK_PRESTART), "prestart", "prestart");
  is_str(config_hook_name(COIL_HOOK_CREATE_RUNTIME), "createRuntime",
         "createRuntime");
  is_str(config_hook_name(COIL_HOOK_CREATE_CONTAINER), "createContainer",
         "createContainer");
  is_str(config_hook_name(COIL_HOOK_START_CONTAINER), "startContainer",
         "startContainer");
  is_str(config_hook_name(COIL_HOOK_POSTSTART), "poststart", "poststart");
  is_str(config_hook_name(COIL_HOOK_POSTSTOP), "poststop", "poststop");
  char out[8];
  int st = run_child(free_null_config, NULL, out, sizeof out);
  ok(exited(st, 0), "config_free(NULL) is a no-op (status %#x)", st);
}

/* Only a bind's relative source is a path, and it is the bundle's. */
static void test_mount_sources(void) {
  struct coil_config *c = parse_ok(
      WITH("'mounts':["
           "{'destination':'/a','type':'bind','source':'data'},"
           "{'destination':'/b','source':'sub/x','options':['rbind']},"
           "{'destination':'/c','type':'none','source':'y','options':['bind']},"
           "{'destination':'/d','type':'bind','source':'/abs'},"
           "{'destination':'/e','type':'tmpfs','source':'tmpfs'},"
           "{'destination':'/f','type':'proc','source':'proc'}]"),
      "mounts with relative sources");
  if (!c)
    return;
  struct coil_error err = {0};
  ok(config_resolve_mount_sources(c, "/b/dir", &err) == 0,
     "resolves mount sources");
  is_str(c->mounts[0].source, "/b/dir/data", "type bind: bundle-relative");
  is_str(c->mounts[1].source, "/b/dir/sub/x", "rbind option: bundle-relative");
  is_str(c->mounts[2].source, "/b/dir/y", "bind option: bundle-relative");
  is_str(c->mounts[3].source, "/abs", "absolute source unchanged");
  is_str(c->mounts[4].source, "tmpfs", "tmpfs source is not a path");
  is_str(c->mounts[5].source, "proc", "proc source is not a path");
  config_free(c);
}

/* linux.resources.blockIO and unified, read back, and their errors. */
static void test_blkio_unified(void) {
  struct coil_config *c = parse_ok(
      LNX("'resources':{'blockIO':{'weight':500,'leafWeight':300,"
          " 'weightDevice':[{'major':8,'minor':0,'weight':200},"
          "  {'major':8,'minor':16,'leafWeight':100}],"
          " 'throttleReadBpsDevice':[{'major':8,'minor':0,'rate':1048576}],"
          " 'throttleWriteBpsDevice':[{'major':8,'minor':0,'rate':2}],"
          " 'throttleReadIOPSDevice':[{'major':8,'minor':0,'rate':3}],"
          " 'throttleWriteIOPSDevice':[{'major':253,'minor':1,'rate':4},"
          "  {'major':8,'minor':0,'rate':5}]},"
          "'unified':{'memory.high':'1048576','io.weight':'default 50'}}"),
      "blockIO and unified");
  if (c) {
    const struct coil_resources *r = &c->lnx.resources;
    ok(r->blkio_weight == 500 && r->blkio_leaf_weight == 300,
       "blockIO.weight, leafWeight");
    ok(r->n_blkio_weight_devices == 2 &&
           r->blkio_weight_devices[0].major == 8 &&
           r->blkio_weight_devices[0].weight == 200 &&
           r->blkio_weight_devices[0].leaf_weight == 0 &&
           r->blkio_weight_devices[1].minor == 16 &&
           r->blkio_weight_devices[1].leaf_weight == 100,
       "blockIO.weightDevice");
    ok(r->n_blkio_throttle[COIL_BLKIO_READ_BPS] == 1 &&
           r->blkio_throttle[COIL_BLKIO_READ_BPS][0].rate == 1048576 &&
           r->blkio_throttle[COIL_BLKIO_WRITE_BPS][0].rate == 2 &&
           r->blkio_throttle[COIL_BLKIO_READ_IOPS][0].rate == 3 &&
           r->n_blkio_throttle[COIL_BLKIO_WRITE_IOPS] == 2 &&
           r->blkio_throttle[COIL_BLKIO_WRITE_IOPS][0].major == 253 &&
           r->blkio_throttle[COIL_BLKIO_WRITE_IOPS][1].rate == 5,
       "blockIO.throttle*Device");
    ok(r->n_unified == 2 && !strcmp(r->unified[0].key, "memory.high") &&
           !strcmp(r->unified[1].value, "default 50"),
       "unified");
    config_free(c);
  }
  expect_error(LNX("'resources':{'blockIO':{'weight':1001}}"),
               "linux.resources.blockIO.weight: 1001 out of range [0, 1000]");
  expect_error(LNX("'resources':{'blockIO':{'leafWeight':'x'}}"),
               "linux.resources.blockIO.leafWeight: expected integer");
  expect_error(LNX("'resources':{'blockIO':{'weightDevice':[{'major':8}]}}"),
               "linux.resources.blockIO.weightDevice[0].minor: required");
  expect_error(
      LNX("'resources':{'blockIO':{'weightDevice':"
          "[{'major':8,'minor':0,'weight':-1}]}}"),
      "linux.resources.blockIO.weightDevice[0].weight: -1 out of range");
  expect_error(LNX("'resources':{'blockIO':{'throttleWriteBpsDevice':"
                   "[{'major':8,'minor':0}]}}"),
               "linux.resources.blockIO.throttleWriteBpsDevice[0].rate: "
               "required");
  expect_error(LNX("'resources':{'blockIO':{'throttleReadIOPSDevice':"
                   "[{'major':-1,'minor':0,'rate':1}]}}"),
               "linux.resources.blockIO.throttleReadIOPSDevice[0].major: -1 "
               "out of range");
  expect_error(LNX("'resources':{'blockIO':[]}"),
               "linux.resources.blockIO: expected object");
  expect_error(LNX("'resources':{'unified':{'pids.max':5}}"),
               "linux.resources.unified[\"pids.max\"]: expected string");
}

int main(void) {
  test_full();
  test_minimal();
  test_unknown_ignored();
  test_document_errors();
  test_field_errors();
  test_linux_errors();
  test_sandbox_errors();
  test_files();
  test_hook_names();
  test_mount_sources();
  test_blkio_unified();
  return tap_done();
}
