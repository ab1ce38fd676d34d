//! The `bourse` binary: parse the command line and hand over to the library.

fn main() -> std::process::ExitCode {
    bourse::cli::main()
}

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
