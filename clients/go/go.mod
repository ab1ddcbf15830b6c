module crashlabpoint

go 1.19
