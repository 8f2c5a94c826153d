# No seed data: the manifest task creates the only record the app needs.
