# X4: catastrophic regex backtracking (CPU limit).
import re


def handle(request):
    return str(re.match('(a+)+$', 'a' * 40 + '!'))  # LIMIT
