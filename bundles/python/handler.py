# The default bundle's handler: echoes the request. `coil py` replaces it.
def handle(request):
    return request
