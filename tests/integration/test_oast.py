"""The OAST reference deployment (oast/): DNS and HTTP callback listeners
whose answers tenant handlers decide. Every case of oast_cases.py runs here
with the `py` backend (a cold `coil py` per call); oast_serve_tests.py holds
the same cases for the `serve` backend."""

import oast_cases

BACKENDS = ("py",)

for _backend in BACKENDS:
    oast_cases.install(globals(), _backend)
