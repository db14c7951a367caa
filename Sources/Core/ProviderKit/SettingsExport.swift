/// ProviderKit's users read and declare settings with `Setting`; the declarations below the provider kit are Settings'.
@_exported import Settings
