//! The FT class table of NPB 3.4: grid, iterations, NPB's reference
//! checksums and its operation count.

use crate::npb::Class;

/// Largest relative error (modulus of the complex difference over the
/// modulus of the reference) of a checksum that still verifies: NPB's
/// `epsilon`.
pub const VERIFY_TOLERANCE: f64 = 1.0e-12;

/// NPB's `alpha`, the diffusion constant of the evolution operator.
pub const ALPHA: f64 = 1.0e-6;

/// NPB's seed of the initial condition (the same as MG's).
pub const SEED: u64 = crate::npb::rng::SEED_MG;

/// Elements summed by each checksum.
pub const CHECKSUM_POINTS: usize = 1024;

/// Everything that distinguishes one FT class from another.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FtParams {
    /// The class these parameters belong to.
    pub class: Class,
    /// Grid points along x, y, z (NPB's `nx`, `ny`, `nz`), powers of two.
    pub dims: [usize; 3],
    /// Time steps, one checksum each (NPB's `niter`).
    pub iterations: usize,
    /// NPB's reference checksum of every step, `(re, im)`.
    pub reference: &'static [[f64; 2]],
}

const REF_S: [[f64; 2]; 6] = [
    [5.546087004964e+02, 4.845363331978e+02],
    [5.546385409189e+02, 4.865304269511e+02],
    [5.546148406171e+02, 4.883910722336e+02],
    [5.545423607415e+02, 4.901273169046e+02],
    [5.544255039624e+02, 4.917475857993e+02],
    [5.542683411902e+02, 4.932597244941e+02],
];

const REF_W: [[f64; 2]; 6] = [
    [5.673612178944e+02, 5.293246849175e+02],
    [5.631436885271e+02, 5.282149986629e+02],
    [5.594024089970e+02, 5.270996558037e+02],
    [5.560698047020e+02, 5.260027904925e+02],
    [5.530898991250e+02, 5.249400845633e+02],
    [5.504159734538e+02, 5.239212247086e+02],
];

const REF_A: [[f64; 2]; 6] = [
    [5.046735008193e+02, 5.114047905510e+02],
    [5.059412319734e+02, 5.098809666433e+02],
    [5.069376896287e+02, 5.098144042213e+02],
    [5.077892868474e+02, 5.101336130759e+02],
    [5.085233095391e+02, 5.104914655194e+02],
    [5.091487099959e+02, 5.107917842803e+02],
];

const REF_B: [[f64; 2]; 20] = [
    [5.177643571579e+02, 5.077803458597e+02],
    [5.154521291263e+02, 5.088249431599e+02],
    [5.146409228649e+02, 5.096208912659e+02],
    [5.142378756213e+02, 5.101023387619e+02],
    [5.139626667737e+02, 5.103976610617e+02],
    [5.137423460082e+02, 5.105948019802e+02],
    [5.135547056878e+02, 5.107404165783e+02],
    [5.133910925466e+02, 5.108576573661e+02],
    [5.132470705390e+02, 5.109577278523e+02],
    [5.131197729984e+02, 5.110460304483e+02],
    [5.130070319283e+02, 5.111252433800e+02],
    [5.129070537032e+02, 5.111968077718e+02],
    [5.128182883502e+02, 5.112616233064e+02],
    [5.127393733383e+02, 5.113203605551e+02],
    [5.126691062020e+02, 5.113735928093e+02],
    [5.126064276004e+02, 5.114218460548e+02],
    [5.125504076570e+02, 5.114656139760e+02],
    [5.125002331720e+02, 5.115053595966e+02],
    [5.124551951846e+02, 5.115415130407e+02],
    [5.124146770029e+02, 5.115744692211e+02],
];

const REF_C: [[f64; 2]; 20] = [
    [5.195078707457e+02, 5.149019699238e+02],
    [5.155422171134e+02, 5.127578201997e+02],
    [5.144678022222e+02, 5.122251847514e+02],
    [5.140150594328e+02, 5.121090289018e+02],
    [5.137550426810e+02, 5.121143685824e+02],
    [5.135811056728e+02, 5.121496764568e+02],
    [5.134569343165e+02, 5.121870921893e+02],
    [5.133651975661e+02, 5.122193250322e+02],
    [5.132955192805e+02, 5.122454735794e+02],
    [5.132410471738e+02, 5.122663649603e+02],
    [5.131971141679e+02, 5.122830879827e+02],
    [5.131605205716e+02, 5.122965869718e+02],
    [5.131290734194e+02, 5.123075927445e+02],
    [5.131012720314e+02, 5.123166486553e+02],
    [5.130760908195e+02, 5.123241541685e+02],
    [5.130528295923e+02, 5.123304037599e+02],
    [5.130310107773e+02, 5.123356167976e+02],
    [5.130103090133e+02, 5.123399592211e+02],
    [5.129905029333e+02, 5.123435588985e+02],
    [5.129714421109e+02, 5.123465164008e+02],
];

impl FtParams {
    /// The parameters of `class`.
    pub fn of(class: Class) -> Self {
        let (dims, reference): ([usize; 3], &'static [[f64; 2]]) = match class {
            Class::S => ([64, 64, 64], &REF_S),
            Class::W => ([128, 128, 32], &REF_W),
            Class::A => ([256, 256, 128], &REF_A),
            Class::B => ([512, 256, 256], &REF_B),
            Class::C => ([512, 512, 512], &REF_C),
        };
        FtParams {
            class,
            dims,
            iterations: reference.len(),
            reference,
        }
    }

    /// Points of the grid, `nx * ny * nz`.
    pub fn total_points(&self) -> usize {
        self.dims.iter().product()
    }

    /// NPB's operation count of the timed section:
    /// `N (14.8157 + 7.19641 ln N + (5.23518 + 7.21113 ln N) niter)`.
    pub fn operation_count(&self) -> f64 {
        let n = self.total_points() as f64;
        n * (14.8157 + 7.19641 * n.ln() + (5.23518 + 7.21113 * n.ln()) * self.iterations as f64)
    }

    /// The problem in a few words, for table headings.
    pub fn describe(&self) -> String {
        let [nx, ny, nz] = self.dims;
        format!("{nx}x{ny}x{nz} grid, {} iterations", self.iterations)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_match_npb() {
        let s = FtParams::of(Class::S);
        assert_eq!((s.dims, s.iterations), ([64, 64, 64], 6));
        let w = FtParams::of(Class::W);
        assert_eq!((w.dims, w.iterations), ([128, 128, 32], 6));
        assert_eq!(FtParams::of(Class::B).iterations, 20);
        // NPB prints 1.0e-6 * ops / time; class S's ops, by hand:
        // 262144 * (14.8157 + 7.19641 ln 262144 + (5.23518 + 7.21113 ln 262144) * 6).
        let ln = 262_144f64.ln();
        let want = 262_144.0 * (14.8157 + 7.19641 * ln + (5.23518 + 7.21113 * ln) * 6.0);
        assert_eq!(s.operation_count(), want);
        assert!(
            (s.operation_count() / 1e6 - 177.167).abs() < 1e-3,
            "{}",
            s.operation_count()
        );
    }
}
