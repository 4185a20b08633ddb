"""coil serve's client for the listener: coil's own `coil_client` module
(sandbox/coil_client.py in a checkout, share/coil/python/ once installed),
so the wire protocol is implemented once."""

import os
import sys

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PLACES = (os.path.join(_HERE, "sandbox"),
           "/usr/local/share/coil/python", "/usr/share/coil/python")


def client_class():
    """(coil_client.AsyncClient, the exceptions a broken transport
    raises)."""
    for p in _PLACES:
        if os.path.isfile(os.path.join(p, "coil_client.py")) and p not in sys.path:
            sys.path.append(p)
    import coil_client
    return coil_client.AsyncClient, (coil_client.ProtocolError, OSError)
