"""Loads and checks oast/config.json: listeners, tenants, their handler
files, zones and routes, and per-tenant limits. Every mistake is one line
naming the field."""

import json
import os
import re

from oast import answers

DEFAULTS = {
    "timeout_ms": 1000,      # a handler's wall-clock budget
    "queue_ms": 1000,        # how long a call may wait for a free slot
    "memory_mb": 64,         # the sandbox's memory limit
    "max_inflight": 2,       # handler runs at once, per tenant
    "max_queue": 32,         # calls waiting for a slot, per tenant
    "http_body_max": 16384,  # request body bytes passed to a handler
    "ttl_max": 86400,        # largest TTL a handler may answer with
    "state_keys_max": 4096,  # state entries kept per tenant (LRU)
    "state_bytes_max": 2048, # one state value, as compact JSON
    "log_per_s": 20,         # failure log lines per tenant per second
}
LIMIT_MAX = {
    "timeout_ms": 60000, "queue_ms": 60000, "memory_mb": 4096,
    "max_inflight": 256, "max_queue": 100000, "http_body_max": 1 << 20,
    "ttl_max": 604800, "state_keys_max": 1 << 20, "state_bytes_max": 65536,
    "log_per_s": 10000,
}
LIMIT_MIN = {"max_queue": 0, "ttl_max": 0, "log_per_s": 0}
BACKENDS = ("py", "serve")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
LABEL_RE = re.compile(r"^(\*|@|[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)$")


class ConfigError(Exception):
    pass


def _fail(field, msg):
    raise ConfigError("%s: %s" % (field, msg))


def _obj(v, field):
    if not isinstance(v, dict):
        _fail(field, "expected an object")
    return v


def _check_keys(obj, field, allowed):
    for k in obj:
        if k not in allowed:
            _fail("%s.%s" % (field, k), "unknown field")


def _int(v, field, lo, hi):
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        _fail(field, "expected an integer in %d..%d" % (lo, hi))
    return v


def parse_addr(v, field):
    if not isinstance(v, str) or ":" not in v:
        _fail(field, "expected \"HOST:PORT\"")
    host, _, port = v.rpartition(":")
    if not port.isdigit() or not 0 <= int(port) <= 65535 or not host:
        _fail(field, "expected \"HOST:PORT\" with a port in 0..65535")
    return host.strip("[]"), int(port)


def _limits(obj, field, base):
    out = dict(base)
    _obj(obj, field)
    _check_keys(obj, field, DEFAULTS)
    for k, v in obj.items():
        out[k] = _int(v, "%s.%s" % (field, k), LIMIT_MIN.get(k, 1),
                      LIMIT_MAX[k])
    return out


def _zone(v, field):
    if not isinstance(v, str) or not v:
        _fail(field, "expected a domain name")
    z = v.lower().rstrip(".")
    labels = z.split(".")
    if len(z) > 200 or any(not LABEL_RE.match(l) or l in ("*", "@")
                           for l in labels):
        _fail(field, "not a valid domain name: %r" % v)
    return z


def _static(v, field, kind, ttl_max):
    """A fixed answer in a handler result's shape, checked at load time:
    DNS {"static": {"answers": [...]}} (records not of the query's type are
    left out of each answer), HTTP {"static": {"status": 200, ...}}."""
    _check_keys(v, field, ("static",))
    st = _obj(v.get("static"), field + ".static")
    try:
        if kind == "dns":
            answers.check_dns(st, None, ttl_max)
        else:
            answers.check_http(st)
    except answers.AnswerError as e:
        _fail(field + ".static", str(e).replace("result", "static", 1))
    if "state" in st:
        _fail(field + ".static.state", "a static answer keeps no state")
    return {"static": st}


def _routes(v, field, handlers, kind, ttl_max):
    _obj(v, field)
    out = {}
    for label, target in v.items():
        f = "%s.%s" % (field, label)
        if not isinstance(label, str) or not LABEL_RE.match(label):
            _fail(f, "a route is a single label, \"@\" (the apex) or \"*\"")
        if isinstance(target, str):
            if target not in handlers:
                _fail(f, "no handler named %r in this tenant" % target)
            out[label] = target
        elif isinstance(target, dict):
            out[label] = _static(target, f, kind, ttl_max)
        else:
            _fail(f, "expected a handler name or a static answer")
    return out


def load(path):
    """The checked configuration as a dict; paths made absolute."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ConfigError("%s: %s" % (path, e.strerror))
    try:
        cfg = json.loads(raw)
    except ValueError as e:
        raise ConfigError("%s: not JSON: %s" % (path, e))
    base = os.path.dirname(os.path.abspath(path))
    _obj(cfg, "config")
    _check_keys(cfg, "config", ("listen", "backend", "coil", "coil_root",
                                "serve_socket", "defaults", "tenants",
                                "comment"))
    out = {"base": base}
    listen = _obj(cfg.get("listen", {}), "listen")
    _check_keys(listen, "listen", ("dns", "http"))
    out["dns"] = parse_addr(listen["dns"], "listen.dns") if "dns" in listen else None
    out["http"] = parse_addr(listen["http"], "listen.http") if "http" in listen else None
    out["backend"] = cfg.get("backend", "py")
    if out["backend"] not in BACKENDS:
        _fail("backend", "expected one of " + " ".join(BACKENDS))

    def path_field(name, default):
        v = cfg.get(name, default)
        if not isinstance(v, str) or not v:
            _fail(name, "expected a path")
        return os.path.normpath(os.path.join(base, v))
    out["coil"] = path_field("coil", "../coil")
    out["coil_root"] = path_field("coil_root", "/run/coil-oast")
    out["serve_socket"] = path_field("serve_socket", "/run/coil/serve.sock")
    defaults = _limits(cfg.get("defaults", {}), "defaults", DEFAULTS)
    tenants = _obj(cfg.get("tenants"), "tenants")
    if not tenants:
        _fail("tenants", "expected at least one tenant")
    out["tenants"] = {}
    zones_seen = {}
    for name, t in tenants.items():
        field = "tenants." + name
        if not NAME_RE.match(name):
            _fail(field, "a tenant name is [a-z0-9_-], at most 63 characters")
        _obj(t, field)
        _check_keys(t, field, ("zones", "handlers", "dns", "http", "limits",
                               "secret", "params", "bundle", "comment"))
        tc = {"name": name}
        tc["limits"] = _limits(t.get("limits", {}), field + ".limits",
                               defaults)
        zones = t.get("zones")
        if not isinstance(zones, list) or not zones:
            _fail(field + ".zones", "expected a non-empty list of domains")
        tc["zones"] = []
        for i, z in enumerate(zones):
            zn = _zone(z, "%s.zones[%d]" % (field, i))
            if zn in zones_seen:
                _fail("%s.zones[%d]" % (field, i), "zone %s is already tenant "
                      "%s's" % (zn, zones_seen[zn]))
            zones_seen[zn] = name
            tc["zones"].append(zn)
        handlers = _obj(t.get("handlers", {}), field + ".handlers")
        tc["handlers"] = {}
        for hname, hfile in handlers.items():
            hf = "%s.handlers.%s" % (field, hname)
            if not NAME_RE.match(hname):
                _fail(hf, "a handler name is [a-z0-9_-], at most 63 characters")
            if not isinstance(hfile, str) or not hfile:
                _fail(hf, "expected the handler's file")
            p = os.path.normpath(os.path.join(base, hfile))
            if not os.path.isfile(p):
                _fail(hf, "no such file: %s" % p)
            tc["handlers"][hname] = p
        ttl_max = tc["limits"]["ttl_max"]
        tc["dns"] = _routes(t.get("dns", {}), field + ".dns", tc["handlers"],
                            "dns", ttl_max)
        tc["http"] = _routes(t.get("http", {}), field + ".http",
                             tc["handlers"], "http", ttl_max)
        secret = t.get("secret")
        if secret is not None and (not isinstance(secret, str) or
                                   len(secret) < 16):
            _fail(field + ".secret", "expected a string of at least 16 characters")
        tc["secret"] = secret
        tc["params"] = _obj(t.get("params", {}), field + ".params")
        bundle = t.get("bundle")
        if bundle is not None:
            if not isinstance(bundle, str) or not bundle:
                _fail(field + ".bundle", "expected a bundle directory")
            bundle = os.path.normpath(os.path.join(base, bundle))
        tc["bundle"] = bundle
        out["tenants"][name] = tc
    return out


def zone_index(cfg):
    """[(zone, tenant name)], longest zone first: the first suffix match of
    a name is its most specific zone."""
    pairs = [(z, n) for n, t in cfg["tenants"].items() for z in t["zones"]]
    return sorted(pairs, key=lambda p: -len(p[0]))


def find_zone(index, name):
    """(tenant, zone, relative labels) of a lowercased name without the
    trailing dot, or None when no tenant's zone holds it."""
    for zone, tenant in index:
        if name == zone:
            return tenant, zone, []
        if name.endswith("." + zone):
            return tenant, zone, name[:-len(zone) - 1].split(".")
    return None


def route_for(routes, labels):
    """The route of a name below a zone: the label right of the zone picks
    it (`x.rebind.t1.oast.test` -> "rebind"), "@" is the apex, "*" the rest."""
    key = labels[-1] if labels else "@"
    if key in routes:
        return key, routes[key]
    if labels and "*" in routes:
        return "*", routes["*"]
    return key, None
