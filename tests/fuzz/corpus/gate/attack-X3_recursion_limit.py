# X3: raise the recursion limit, then recurse deeply (sys must be
# unreachable).
import sys  # GATE


def handle(request):
    sys.setrecursionlimit(10**6)
    return f(0)


def f(n):
    return f(n + 1)
