// Microsoft SEAL per-operation timings at the parameters of `nectar bench he` (issue 4's
// "within 1.5x of SEAL" comparison, measured on the same machine). Not part of the Rust
// workspace; built by scripts/seal_bench/build.sh against a local SEAL 4.1 build.
//
// Parameters: N in {4096, 8192, 16384}, CoeffModulus::BFVDefault(N) (the last prime is SEAL's
// special prime), t = PlainModulus::Batching(N, 20) — the `seal-default` set of
// crates/bench/src/he.rs; at N = 8192 also the modulus sizes of its `bumblebee-olt` set. Each
// time is the median of repeated runs (at least 5, up to ~0.3 s per operation), microseconds,
// wall-clock and process CPU time, single thread (SEAL does not multi-thread). Output: one
// JSON object per line.
//
// `seal_bench kernels` (issue 50, item 3) instead measures, at the sets of
// `nectar bench he --set kernels` (crates/bench/src/he.rs `bench_he_kernels`):
//   leaf-bfv     BFV ct x ct + relinearisation at LEAF's set: N = 32768, t = 65537, ciphertext
//                primes {30,60,28,55x9,56} and a 60-bit special prime (nectar's
//                `Params::leaf_bfv`; LEAFc itself uses the 56-bit prime as SEAL's special
//                prime, nectar keeps it as a data prime and adds the 60-bit one, so here SEAL
//                gets nectar's 13 data primes + 60). SEAL multiplies by BEHZ, nectar by HPS:
//                same inputs and outputs (coefficient form), different RNS algorithm.
//   blb-exec-d4  CKKS at BLB's executable set N = 2^14, depth 4: {60,40,40x4} + special 60,
//                scale 2^40 (`nectar_linear::layer::blb_fused::executable_params(2^14, 4)`);
//   blb-exec-d7  the same at N = 2^15, depth 7: {60,40,40x7} + special 60.
// Primes: SEAL's CoeffModulus::Create (largest NTT primes of each size, as nectar's
// `ntt_primes`); the exact values may differ from nectar's where sizes repeat, not the cost.
// CKKS ciphertexts stay in NTT form in SEAL (rescale transforms back internally); nectar's
// relinearisation / rotation / rescale return coefficient form, so the composite
// `ckks_mul_relin_rescale` is the like-for-like number.
#include <seal/seal.h>
#include <seal/util/ntt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <time.h>
#include <vector>

using namespace seal;

// Process CPU time (all threads) in microseconds.
static double cpu_micros()
{
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

struct Timing
{
    double wall, cpu;
};

// Median wall-clock and median CPU time of repeated runs (same rule as nectar's bench_he), with
// an untimed `setup` before each run.
static Timing median_micros_setup(const std::function<void()> &setup, const std::function<void()> &f)
{
    std::vector<double> wall, cpu;
    auto start = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    while (wall.size() < 5 || (elapsed() < 0.3 && wall.size() < 200))
    {
        setup();
        double c = cpu_micros();
        auto t = std::chrono::steady_clock::now();
        f();
        wall.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count());
        cpu.push_back(cpu_micros() - c);
    }
    std::sort(wall.begin(), wall.end());
    std::sort(cpu.begin(), cpu.end());
    return { wall[wall.size() / 2], cpu[cpu.size() / 2] };
}

static Timing median_micros(const std::function<void()> &f)
{
    return median_micros_setup([] {}, f);
}

static std::string g_moduli;
static std::string g_params;
static size_t g_n;

static void emit(const std::string &op, Timing t, long long bytes = -1)
{
    std::printf(
        "{\"impl\":\"seal\",\"version\":\"%d.%d.%d\",\"n\":%zu,\"params\":\"%s\",\"moduli\":\"%s\","
        "\"op\":\"%s\",\"micros\":%.2f,\"cpu_micros\":%.2f",
        SEAL_VERSION_MAJOR, SEAL_VERSION_MINOR, SEAL_VERSION_PATCH, g_n, g_params.c_str(), g_moduli.c_str(), op.c_str(),
        t.wall, t.cpu);
    if (bytes >= 0)
        std::printf(",\"bytes\":%lld", bytes);
    std::printf("}\n");
    std::fflush(stdout);
}

// `olt`: the ciphertext modulus sizes of nectar's BumbleBee OLT preset, {59,55,49 | 49} at
// N = 8192 (SEAL cannot use its t = 2^64, so t is the same 20-bit batching prime: the
// automorphism, products, NTTs and modulus switching do not depend on t).
static void bench(size_t n, bool olt = false)
{
    EncryptionParameters parms(scheme_type::bfv);
    parms.set_poly_modulus_degree(n);
    parms.set_coeff_modulus(olt ? CoeffModulus::Create(n, { 59, 55, 49, 49 }) : CoeffModulus::BFVDefault(n));
    g_params = olt ? "bumblebee-olt" : "seal-default";
    parms.set_plain_modulus(PlainModulus::Batching(n, 20));
    SEALContext context(parms, true, sec_level_type::tc128);
    g_n = n;
    g_moduli.clear();
    auto &cm = parms.coeff_modulus();
    for (size_t i = 0; i < cm.size(); i++)
    {
        if (i + 1 == cm.size())
            g_moduli += "| ";
        g_moduli += std::to_string(cm[i].bit_count());
        if (i + 1 < cm.size())
            g_moduli += ",";
    }

    // NTT forward + inverse on one prime (SEAL's Harvey NTT, as used by its evaluator).
    auto key_data = context.key_context_data();
    std::mt19937_64 rng(42);
    for (size_t i = 0; i < cm.size(); i++)
    {
        const util::NTTTables &tables = key_data->small_ntt_tables()[i];
        std::vector<uint64_t> buf(n);
        for (auto &x : buf)
            x = rng() % cm[i].value();
        Timing t = median_micros([&] {
            util::ntt_negacyclic_harvey(buf.data(), tables);
            util::inverse_ntt_negacyclic_harvey(buf.data(), tables);
        });
        emit("ntt_fwd_inv_prime" + std::to_string(i) + "_" + std::to_string(cm[i].bit_count()) + "bit", t);
    }

    KeyGenerator keygen(context);
    SecretKey sk = keygen.secret_key();
    PublicKey pk;
    keygen.create_public_key(pk);
    GaloisKeys gk;
    keygen.create_galois_keys(std::vector<uint32_t>{ 3 }, gk);
    Encryptor enc_pk(context, pk);
    Encryptor enc_sk(context, sk);
    Decryptor dec(context, sk);
    Evaluator ev(context);

    uint64_t t_mod = parms.plain_modulus().value();
    Plaintext pt(n);
    for (size_t k = 0; k < n; k++)
        pt[k] = rng() % t_mod;

    Ciphertext ct;
    enc_pk.encrypt(pt, ct);

    emit("encrypt_sk", median_micros([&] {
             Serializable<Ciphertext> s = enc_sk.encrypt_symmetric(pt);
             (void)s;
         }));
    emit("encrypt_pk", median_micros([&] {
             Ciphertext c;
             enc_pk.encrypt(pt, c);
         }));
    // Serialized sizes: uncompressed (SEAL stores 8 bytes per residue) and, when SEAL was
    // built with zstd, compressed (SEAL's default mode; the zero high bits of the residues go).
    {
        Serializable<Ciphertext> s = enc_sk.encrypt_symmetric(pt);
        emit("ct_bytes_fresh_seeded", { 0, 0 }, (long long)s.save_size(compr_mode_type::none));
#ifdef SEAL_USE_ZSTD
        std::stringstream ss;
        emit("ct_bytes_fresh_seeded_zstd", { 0, 0 }, (long long)s.save(ss, compr_mode_type::zstd));
#endif
    }
    emit("decrypt", median_micros([&] {
             Plaintext out;
             dec.decrypt(ct, out);
         }));

    // Plaintext x ciphertext. Pre-transformed plaintext (SEAL allows it for BFV via
    // transform_to_ntt_inplace(plain, parms_id)), ciphertext already in NTT form.
    Plaintext pt_ntt;
    ev.transform_to_ntt(pt, ct.parms_id(), pt_ntt);
    Ciphertext ct_ntt;
    ev.transform_to_ntt(ct, ct_ntt);
    emit("mul_plain_ntt_form", median_micros([&] {
             Ciphertext out;
             ev.multiply_plain(ct_ntt, pt_ntt, out);
         }));
    // Same, ciphertext given in coefficient form: forward NTT of both polynomials + product
    // (nectar's mul_plain on a coefficient-form ciphertext; result in NTT form).
    emit("mul_plain_incl_ntt", median_micros([&] {
             Ciphertext out;
             ev.transform_to_ntt(ct, out);
             ev.multiply_plain_inplace(out, pt_ntt);
         }));
    // SEAL's default BFV path: both in coefficient form (transforms the plaintext too, and the
    // result back to coefficient form).
    emit("mul_plain_seal_default_coeff", median_micros([&] {
             Ciphertext out;
             ev.multiply_plain(ct, pt, out);
         }));
    emit("plain_to_ntt", median_micros([&] {
             Plaintext p;
             ev.transform_to_ntt(pt, ct.parms_id(), p);
         }));
    // Automorphism X -> X^3 with key switching (BFV: coefficient-form input).
    emit("automorphism_keyswitch", median_micros([&] {
             Ciphertext out;
             ev.apply_galois(ct, 3, gk, out);
         }));
    // In place on a fresh copy (the copy untimed), as nectar's `mod_switch_down`.
    Ciphertext fresh;
    emit("mod_switch_down", median_micros_setup([&] { fresh = ct; }, [&] { ev.mod_switch_to_next_inplace(fresh); }));
    emit("ct_bytes_full", { 0, 0 }, (long long)ct.save_size(compr_mode_type::none));
    Ciphertext low = ct;
    while (context.get_context_data(low.parms_id())->next_context_data())
        ev.mod_switch_to_next_inplace(low);
    emit("ct_bytes_one_prime", { 0, 0 }, (long long)low.save_size(compr_mode_type::none));
#ifdef SEAL_USE_ZSTD
    {
        std::stringstream s1, s2;
        emit("ct_bytes_full_zstd", { 0, 0 }, (long long)ct.save(s1, compr_mode_type::zstd));
        emit("ct_bytes_one_prime_zstd", { 0, 0 }, (long long)low.save(s2, compr_mode_type::zstd));
    }
#endif
}

static void set_moduli_string(const EncryptionParameters &parms)
{
    g_moduli.clear();
    auto &cm = parms.coeff_modulus();
    for (size_t i = 0; i < cm.size(); i++)
    {
        if (i + 1 == cm.size())
            g_moduli += "| ";
        g_moduli += std::to_string(cm[i].bit_count());
        if (i + 1 < cm.size())
            g_moduli += ",";
    }
}

static void bench_ntt_prime0(const SEALContext &context, const EncryptionParameters &parms, std::mt19937_64 &rng)
{
    auto &cm = parms.coeff_modulus();
    const util::NTTTables &tables = context.key_context_data()->small_ntt_tables()[0];
    std::vector<uint64_t> buf(g_n);
    for (auto &x : buf)
        x = rng() % cm[0].value();
    emit("ntt_fwd_inv_prime0_" + std::to_string(cm[0].bit_count()) + "bit", median_micros([&] {
             util::ntt_negacyclic_harvey(buf.data(), tables);
             util::inverse_ntt_negacyclic_harvey(buf.data(), tables);
         }));
}

// BFV ct x ct at LEAF's set (see the header): two fresh ciphertexts at the top level.
static void bench_bfv_leaf()
{
    size_t n = 32768;
    EncryptionParameters parms(scheme_type::bfv);
    parms.set_poly_modulus_degree(n);
    parms.set_coeff_modulus(CoeffModulus::Create(n, { 30, 60, 28, 55, 55, 55, 55, 55, 55, 55, 55, 55, 56, 60 }));
    parms.set_plain_modulus(65537);
    SEALContext context(parms, true, sec_level_type::tc128);
    if (!context.parameters_set())
    {
        std::fprintf(stderr, "leaf-bfv: %s\n", context.parameter_error_message());
        std::exit(1);
    }
    g_n = n;
    g_params = "leaf-bfv";
    set_moduli_string(parms);
    std::mt19937_64 rng(43);
    bench_ntt_prime0(context, parms, rng);

    KeyGenerator keygen(context);
    SecretKey sk = keygen.secret_key();
    RelinKeys rk;
    keygen.create_relin_keys(rk);
    Encryptor enc(context, sk);
    Evaluator ev(context);
    auto fresh = [&] {
        Plaintext pt(n);
        for (size_t k = 0; k < n; k++)
            pt[k] = rng() % 65537;
        Ciphertext c;
        enc.encrypt_symmetric(pt, c);
        return c;
    };
    Ciphertext a = fresh(), b = fresh();
    emit("bfv_mul_relin", median_micros([&] {
             Ciphertext out;
             ev.multiply(a, b, out);
             ev.relinearize_inplace(out, rk);
         }));
    emit("bfv_mul", median_micros([&] {
             Ciphertext out;
             ev.multiply(a, b, out);
         }));
    Ciphertext t3;
    ev.multiply(a, b, t3);
    emit("bfv_relin", median_micros([&] {
             Ciphertext out;
             ev.relinearize(t3, rk, out);
         }));
    emit("bfv_square_relin", median_micros([&] {
             Ciphertext out;
             ev.square(a, out);
             ev.relinearize_inplace(out, rk);
         }));
}

// CKKS at one of BLB's executable sets (see the header): fresh ciphertexts at the top level.
static void bench_ckks_blb(const char *name, size_t n, int depth)
{
    std::vector<int> bits{ 60, 40 };
    for (int i = 0; i < depth; i++)
        bits.push_back(40);
    bits.push_back(60);
    EncryptionParameters parms(scheme_type::ckks);
    parms.set_poly_modulus_degree(n);
    parms.set_coeff_modulus(CoeffModulus::Create(n, bits));
    SEALContext context(parms, true, sec_level_type::tc128);
    if (!context.parameters_set())
    {
        std::fprintf(stderr, "%s: %s\n", name, context.parameter_error_message());
        std::exit(1);
    }
    g_n = n;
    g_params = name;
    set_moduli_string(parms);
    std::mt19937_64 rng(44);
    bench_ntt_prime0(context, parms, rng);

    KeyGenerator keygen(context);
    SecretKey sk = keygen.secret_key();
    RelinKeys rk;
    keygen.create_relin_keys(rk);
    GaloisKeys gk;
    keygen.create_galois_keys(std::vector<int>{ 1 }, gk);
    Encryptor enc(context, sk);
    Evaluator ev(context);
    CKKSEncoder encoder(context);
    double scale = std::pow(2.0, 40);
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    auto fresh = [&] {
        std::vector<double> v(encoder.slot_count());
        for (auto &x : v)
            x = dist(rng);
        Plaintext pt;
        encoder.encode(v, scale, pt);
        Ciphertext c;
        enc.encrypt_symmetric(pt, c);
        return c;
    };
    Ciphertext a = fresh(), b = fresh();
    emit("ckks_mul_relin_rescale", median_micros([&] {
             Ciphertext out;
             ev.multiply(a, b, out);
             ev.relinearize_inplace(out, rk);
             ev.rescale_to_next_inplace(out);
         }));
    emit("ckks_mul", median_micros([&] {
             Ciphertext out;
             ev.multiply(a, b, out);
         }));
    Ciphertext t3;
    ev.multiply(a, b, t3);
    emit("ckks_relin", median_micros([&] {
             Ciphertext out;
             ev.relinearize(t3, rk, out);
         }));
    emit("ckks_mul_relin", median_micros([&] {
             Ciphertext out;
             ev.multiply(a, b, out);
             ev.relinearize_inplace(out, rk);
         }));
    Ciphertext r;
    ev.relinearize(t3, rk, r);
    emit("ckks_rescale", median_micros([&] {
             Ciphertext out;
             ev.rescale_to_next(r, out);
         }));
    emit("ckks_rotate1", median_micros([&] {
             Ciphertext out;
             ev.rotate_vector(a, 1, gk, out);
         }));
}

int main(int argc, char **argv)
{
    if (argc > 1 && std::string(argv[1]) == "kernels")
    {
        bench_bfv_leaf();
        bench_ckks_blb("blb-exec-d4", 16384, 4);
        bench_ckks_blb("blb-exec-d7", 32768, 7);
        return 0;
    }
    std::vector<size_t> ns;
    for (int i = 1; i < argc; i++)
        ns.push_back(std::strtoul(argv[i], nullptr, 10));
    if (ns.empty())
        ns = { 4096, 8192, 16384 };
    for (size_t n : ns)
    {
        bench(n);
        if (n == 8192)
            bench(n, true);
    }
    return 0;
}
