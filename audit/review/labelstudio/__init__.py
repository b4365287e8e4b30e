"""The Label Studio client package: `client` (connections, the Server adapter over the SDK,
configured servers and tokens), `forms` (the sign-up and login forms), `errors`
(ServerError). Only `client` imports label_studio_sdk."""
