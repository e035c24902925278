"""`fusion bench sustain`: the highest steady rate kept up with, beside this machine's floor."""
