import sys
from pathlib import Path

# Let tests import the brute-force references in tests/reference.py.
sys.path.insert(0, str(Path(__file__).parent))
