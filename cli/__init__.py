"""The operator CLI (`tessera`): certificates, starting and inspecting a deployment."""
