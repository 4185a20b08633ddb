# X2: a 10 GB string (memory limit).
def handle(request):
    s = 'a' * 10**10  # LIMIT
    return len(s)
