module sluice.test/clients

go 1.25

require (
	github.com/elastic/go-lumber v0.1.0
	github.com/fluent/fluent-logger-golang v1.10.2
)

require (
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/philhofer/fwd v1.2.0 // indirect
	github.com/tinylib/msgp v1.3.0 // indirect
)
