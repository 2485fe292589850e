"""karpy's bottom floor: leaf modules every other package may import.

Nothing here imports from the rest of karpy. `quantity` (Kubernetes quantities as exact
integers), `clock` (the injectable clock), `component` (the long-running-part protocol
the operator runs) and `names` (apimachinery's name and label rules) are shared by the
API models, the scheduler, the transport, the controllers and the API server emulator.
"""
