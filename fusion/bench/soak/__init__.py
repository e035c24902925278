"""`fusion bench soak`: an hour under load, with kills and a restart (issue 39, item 8)."""
